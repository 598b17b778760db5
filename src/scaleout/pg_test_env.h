// What the scale-out tests on a real PostgreSQL share: the pool of the cluster that
// tests/lib/pg.py started for them (ICESTREAM_PG), and lease timings short enough for a
// test to see leases move.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "pg/client.h"
#include "scaleout/lease_manager.h"

namespace icestream::scaleout {

inline std::unique_ptr<pg::PgPool> TestPgPool() {
  const char* c = std::getenv("ICESTREAM_PG");
  EXPECT_NE(c, nullptr) << "ICESTREAM_PG is not set: run this test through tests/lib/pg.py";
  pg::PgPoolOptions o;
  o.conninfo = c ? c : "host=127.0.0.1 port=1";
  auto p = pg::PgPool::Open(o);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? std::move(*p) : nullptr;
}

inline LeaseOptions FastLeases() {
  LeaseOptions o;
  o.lease_ms = 1500;
  o.renew_ms = 250;
  o.take_ms = 250;
  return o;
}

}  // namespace icestream::scaleout
