// Writes N MB of JSON lines of synthetic card transactions (the shape of
// transactions.schema.json) to stdout: deterministic (fixed seed), realistic
// cardinalities (many cards and merchants, few currencies), some nulls and missing
// optional members.
//   gen_transactions SIZE_MB > in.jsonl
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

namespace {

uint64_t state = 0x9E3779B97F4A7C15ull;
uint64_t Next() {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}
uint64_t Below(uint64_t n) { return Next() % n; }

const char* kCurrencies[] = {"USD", "EUR", "GBP", "JPY", "CHF", "SEK", "BRL", "INR"};
const char* kBrands[] = {"VISA", "MASTERCARD", "AMEX", "DISCOVER", "JCB"};
const char* kStatus[] = {"APPROVED", "APPROVED", "APPROVED", "DECLINED", "PENDING", "REVERSED"};
const char* kCountries[] = {"US", "DE", "GB", "FR", "JP", "BR", "IN", "SE", "CH", "ES", "IT", "NL"};
const char* kCities[] = {"New York", "Berlin", "London", "Paris", "Tokyo", "São Paulo", "Mumbai",
                         "Stockholm", "Zürich", "Madrid", "Milano", "Amsterdam", "Chicago", "Köln"};
const char* kWords[] = {"Coffee", "Market", "Books", "Travel", "Fuel", "Pharmacy", "Electronics",
                        "Grocery", "Hotel", "Restaurant", "Cinema", "Airline", "Bakery", "Sports"};
const char* kTags[] = {"recurring", "contactless", "3ds", "foreign", "high_value", "first_use",
                       "wallet", "chip", "manual_entry"};

void Uuid(std::string* s) {
  static const char* hex = "0123456789abcdef";
  uint64_t a = Next(), b = Next();
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) s->push_back('-');
    uint64_t w = i < 16 ? a : b;
    s->push_back(hex[(w >> (4 * (i % 16))) & 15]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gen_transactions SIZE_MB\n");
    return 2;
  }
  const uint64_t target = std::strtoull(argv[1], nullptr, 10) * 1000 * 1000;
  uint64_t written = 0;
  int64_t t = 1735689600LL * 1000000;  // 2025-01-01T00:00:00Z
  std::string s;
  char buf[256];
  while (written < target) {
    s.clear();
    t += static_cast<int64_t>(Below(2000000));
    time_t secs = static_cast<time_t>(t / 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    s += "{\"transaction_id\":\"";
    Uuid(&s);
    std::snprintf(buf, sizeof buf, "\",\"event_time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%06dZ\"",
                  tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(t % 1000000));
    s += buf;
    uint64_t cents = Below(100) < 90 ? Below(20000) : Below(5000000);
    std::snprintf(buf, sizeof buf, ",\"amount\":%llu.%02llu,\"currency\":\"%s\"",
                  static_cast<unsigned long long>(cents / 100), static_cast<unsigned long long>(cents % 100),
                  kCurrencies[Below(100) < 60 ? 0 : Below(8)]);
    s += buf;
    uint64_t card = Below(2000000);
    std::snprintf(buf, sizeof buf,
                  ",\"card\":{\"card_id\":\"card_%07llu\",\"brand\":\"%s\",\"last4\":\"%04llu\","
                  "\"expiry\":\"20%02llu-%02llu\",\"issuer_country\":\"%s\"}",
                  static_cast<unsigned long long>(card), kBrands[card % 5],
                  static_cast<unsigned long long>(card % 10000), static_cast<unsigned long long>(26 + card % 8),
                  static_cast<unsigned long long>(1 + card % 12), kCountries[card % 12]);
    s += buf;
    uint64_t merchant = Below(100) < 50 ? Below(1000) : Below(200000);
    std::snprintf(buf, sizeof buf,
                  ",\"merchant\":{\"merchant_id\":%llu,\"name\":\"%s %s #%llu\",\"mcc\":%llu,"
                  "\"city\":\"%s\",\"country\":\"%s\"",
                  static_cast<unsigned long long>(100000 + merchant), kWords[merchant % 14],
                  kWords[(merchant / 14) % 14], static_cast<unsigned long long>(merchant % 997),
                  static_cast<unsigned long long>(4000 + merchant % 2000), kCities[merchant % 14],
                  kCountries[merchant % 12]);
    s += buf;
    if (Below(10) < 8) {
      std::snprintf(buf, sizeof buf, ",\"location\":{\"lat\":%.6f,\"lon\":%.6f}",
                    -60.0 + static_cast<double>(merchant % 12000) / 100.0,
                    -170.0 + static_cast<double>(merchant % 34000) / 100.0);
      s += buf;
    }
    s += "}";
    std::snprintf(buf, sizeof buf, ",\"status\":\"%s\",\"is_online\":%s,\"risk_score\":%.4f",
                  kStatus[Below(6)], Below(2) ? "true" : "false", static_cast<double>(Below(1000000)) / 1e6);
    s += buf;
    s += ",\"tags\":[";
    uint64_t ntags = Below(4);
    for (uint64_t i = 0; i < ntags; ++i) {
      if (i) s += ",";
      s += "\"";
      s += kTags[Below(9)];
      s += "\"";
    }
    s += "]";
    std::snprintf(buf, sizeof buf, ",\"customer_id\":%llu", static_cast<unsigned long long>(1000000000ULL + card / 2));
    s += buf;
    if (Below(10) < 3) {
      std::snprintf(buf, sizeof buf, ",\"installments\":%llu", static_cast<unsigned long long>(1 + Below(36)));
      s += buf;
    } else if (Below(2)) {
      s += ",\"installments\":null";
    }
    std::snprintf(buf, sizeof buf, ",\"settlement_date\":\"%04d-%02d-%02d\"}\n", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday);
    s += buf;
    std::fwrite(s.data(), 1, s.size(), stdout);
    written += s.size();
  }
  return 0;
}
