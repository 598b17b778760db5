// Server configuration: the TOML file over the defaults (every section), the strict
// refusals with file and line, and Validate's checks of what flags and files may set.
#include "server/config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"

namespace icestream::server {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  Result<Config> Load(const std::string& text, Config base = {}) {
    std::string path = dir_.Path("icestream.toml");
    std::ofstream(path) << text;
    return LoadConfigFile(path, std::move(base));
  }
  // The message of a refused file, with the path shortened to "F".
  std::string Refusal(const std::string& text) {
    auto c = Load(text);
    EXPECT_STATUS(kInvalidArgument, c) << text;
    std::string m = c.status().message();
    std::string path = dir_.Path("icestream.toml");
    if (auto at = m.find(path); at != std::string::npos) m.replace(at, path.size(), "F");
    return m;
  }
  testing::TempDir dir_;
};

TEST_F(ConfigTest, AnEmptyFileKeepsTheDefaults) {
  ASSERT_OK_AND_ASSIGN(Config c, Load(""));
  Config d;
  EXPECT_EQ(c.listen, "127.0.0.1:4567");
  EXPECT_EQ(c.region, "us-east-1");
  EXPECT_EQ(c.account, "000000000000");
  EXPECT_EQ(c.segment_bytes, d.segment_bytes);
  EXPECT_TRUE(c.credentials.empty());
  EXPECT_OK(Validate(c));
  EXPECT_EQ(c.host(), "127.0.0.1");
  EXPECT_EQ(c.port(), 4567);
}

TEST_F(ConfigTest, EverySectionIsRead) {
  ASSERT_OK_AND_ASSIGN(Config c, Load(R"(
data_dir = "/var/lib/icestream"
listen = "[::1]:9000"
region = "eu-west-1"
account = "111122223333"
log_level = "debug"
aws_strict = true

[[credentials]]
access_key_id = "AKID1"
secret_access_key = "secret1"
[[credentials]]
access_key_id = "AKID2"
secret_access_key = "secret2"

[storage]
fsync = false
segment_bytes = 1048576
commit_threads = 8
max_open_segment_files = 64

[server]
io_threads = 3
idle_timeout_seconds = 30
access_log = true

[auth]
bearer_tokens = ["t1", "t2"]
public_metrics = true

[s3]
endpoint = "http://127.0.0.1:9000"
path_style = false
max_attempts = 3

[delivery]
workers = 4
table_target_file_bytes = 65536
table_compaction = false

[kinesis]
iterator_ttl_ms = 1000

[iceberg]
default_warehouse = "lake"

[limits]
shard_limit = 100
on_demand_stream_limit = 0
)"));
  EXPECT_EQ(c.data_dir, "/var/lib/icestream");
  EXPECT_EQ(c.host(), "::1");
  EXPECT_EQ(c.port(), 9000);
  EXPECT_EQ(c.region, "eu-west-1");
  EXPECT_EQ(c.account, "111122223333");
  EXPECT_TRUE(c.aws_strict);
  EXPECT_EQ(c.credentials,
            (std::map<std::string, std::string>{{"AKID1", "secret1"}, {"AKID2", "secret2"}}));
  EXPECT_FALSE(c.fsync);
  EXPECT_EQ(c.segment_bytes, 1048576u);
  EXPECT_EQ(c.commit_threads, 8u);
  EXPECT_EQ(c.max_open_segment_files, 64u);
  EXPECT_EQ(c.io_threads, 3u);
  EXPECT_EQ(c.idle_timeout_seconds, 30);
  EXPECT_TRUE(c.access_log);
  EXPECT_EQ(c.bearer_tokens, (std::vector<std::string>{"t1", "t2"}));
  EXPECT_TRUE(c.public_metrics);
  EXPECT_EQ(c.s3_endpoint, "http://127.0.0.1:9000");
  EXPECT_FALSE(c.s3_path_style);
  EXPECT_EQ(c.s3_max_attempts, 3);
  EXPECT_EQ(c.delivery_workers, 4u);
  EXPECT_EQ(c.table_target_file_bytes, 65536);
  EXPECT_FALSE(c.table_compaction);
  EXPECT_EQ(c.iterator_ttl_ms, 1000);
  EXPECT_EQ(c.iceberg_default_warehouse, "lake");
  EXPECT_EQ(c.shard_limit, 100u);
  EXPECT_EQ(c.on_demand_stream_limit, 0u);
  EXPECT_OK(Validate(c));
}

TEST_F(ConfigTest, AWorkerHasItsOwnListenAndDataDir) {
  // One file for serve and its workers: the top level is serve's, [worker] the worker's.
  ASSERT_OK_AND_ASSIGN(Config c, Load(R"(
listen = "127.0.0.1:4567"
data_dir = "/srv/icestream"
[worker]
listen = "0.0.0.0:9100"
data_dir = "/srv/worker"
)"));
  EXPECT_EQ(c.listen, "127.0.0.1:4567");
  EXPECT_EQ(c.data_dir, "/srv/icestream");
  EXPECT_EQ(c.worker_listen, "0.0.0.0:9100");
  EXPECT_EQ(c.worker_data_dir, "/srv/worker");
  ASSERT_OK_AND_ASSIGN(Config d, Load("listen = \"127.0.0.1:4567\"\n"));
  EXPECT_EQ(d.worker_listen, "127.0.0.1:4568");
  EXPECT_EQ(d.worker_data_dir, "./icestream-worker-data");
  ASSERT_OK_AND_ASSIGN(Config bad, Load("[worker]\nlisten = \"nowhere\"\n"));
  EXPECT_STATUS(kInvalidArgument, Validate(bad));
}

TEST_F(ConfigTest, TheFileOverridesTheBaseItIsGiven) {
  Config base;
  base.listen = "127.0.0.1:1";  // as a flag read before the file would set it
  base.log_level = "warn";
  ASSERT_OK_AND_ASSIGN(Config c, Load("log_level = \"error\"\n", base));
  EXPECT_EQ(c.listen, "127.0.0.1:1");
  EXPECT_EQ(c.log_level, "error");
}

TEST_F(ConfigTest, MistakesAreRefusedWithFileAndLine) {
  EXPECT_EQ(Refusal("region = \"x\"\nlisten = 4567\n"), "config F line 2: listen must be a string");
  EXPECT_EQ(Refusal("\n\n[storage]\nsegment_bytes = 10\n"),
            "config F line 4: storage.segment_bytes must be between 4096 and 9223372036854775807, "
            "got 10");
  EXPECT_EQ(Refusal("[storage]\nfsync = \"yes\"\n"),
            "config F line 2: storage.fsync must be true or false");
  std::string unknown = Refusal("[delivery]\nworkerz = 2\n");
  EXPECT_NE(
      unknown.find("config F line 2: unknown key 'workerz' in [delivery] (known keys: workers,"),
      std::string::npos)
      << unknown;
  EXPECT_NE(Refusal("[nosuch]\nx = 1\n").find("unknown key 'nosuch' in the top level"),
            std::string::npos);
  EXPECT_EQ(Refusal("storage = 3\n"), "config F line 1: storage must be a section ([storage])");
  EXPECT_NE(
      Refusal("[credentials]\naccess_key_id = \"a\"\n").find("write each key as [[credentials]]"),
      std::string::npos);
  EXPECT_NE(Refusal("[[credentials]]\naccess_key_id = \"a\"\n")
                .find("needs a non-empty access_key_id and secret_access_key"),
            std::string::npos);
  EXPECT_NE(Refusal("[auth]\nbearer_tokens = [\"\"]\n").find("must not hold an empty string"),
            std::string::npos);
  EXPECT_NE(Refusal("region = \"unterminated\n").find("config F line 1: "), std::string::npos);
  EXPECT_STATUS(kInvalidArgument, LoadConfigFile(dir_.Path("missing.toml"), Config{}));
}

TEST_F(ConfigTest, ValidateChecksWhatFlagsCanSet) {
  auto invalid = [](auto mutate) {
    Config c;
    mutate(c);
    return Validate(c);
  };
  EXPECT_STATUS(kInvalidArgument, invalid([](Config& c) { c.log_level = "loud"; }));
  EXPECT_STATUS(kInvalidArgument, invalid([](Config& c) { c.region = ""; }));
  EXPECT_STATUS(kInvalidArgument, invalid([](Config& c) { c.listen = "127.0.0.1"; }));
  EXPECT_STATUS(kInvalidArgument, invalid([](Config& c) { c.listen = "127.0.0.1:"; }));
  EXPECT_STATUS(kInvalidArgument, invalid([](Config& c) { c.listen = "127.0.0.1:45x"; }));
  EXPECT_STATUS(kInvalidArgument, invalid([](Config& c) { c.listen = "127.0.0.1:65536"; }));
  // A port too long for any integer is refused, not thrown.
  EXPECT_STATUS(kInvalidArgument,
                invalid([](Config& c) { c.listen = "127.0.0.1:99999999999999999999999"; }));
  EXPECT_STATUS(kInvalidArgument, invalid([](Config& c) { c.tls_cert = "cert.pem"; }));
  EXPECT_STATUS(kInvalidArgument, invalid([](Config& c) { c.account = "12345"; }));
  EXPECT_STATUS(kInvalidArgument, invalid([](Config& c) { c.account = "00000000000a"; }));
  EXPECT_STATUS(kInvalidArgument, invalid([](Config& c) { c.commit_threads = 0; }));
  EXPECT_OK(invalid([](Config& c) { c.listen = "0.0.0.0:0"; }));
  EXPECT_OK(invalid([](Config& c) {
    c.tls_cert = "cert.pem";
    c.tls_key = "key.pem";
  }));
}

}  // namespace
}  // namespace icestream::server
