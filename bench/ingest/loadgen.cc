// loadgen: a PutRecords load generator for any Kinesis-compatible endpoint. Each
// connection is one thread with a blocking keep-alive HTTP/1.1 socket sending prebuilt
// request bodies, so the generator costs little CPU next to the server it measures.
//
//   loadgen --host 127.0.0.1 --port 4567 --stream bench [--connections 8] [--seconds 15]
//           [--records 500] [--record-size 1024] [--bodies 16] [--cbor 1]
// --cbor 1 sends the same requests as CBOR (application/x-amz-cbor-1.1, what the Java SDK
// and the KCL send by default): Data as byte strings instead of base64 text.
// Prints one JSON line: requests, records, payload MB/s, records/s, latency percentiles.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/base64.h"

namespace {

struct Options {
  std::string host = "127.0.0.1";
  int port = 4567;
  std::string stream = "bench";
  int connections = 8;
  double seconds = 15;
  int records = 500;
  int record_size = 1024;
  int bodies = 16;
  double warmup = 2;
  bool json = false;       // ~record-size JSON objects instead of random bytes
  long total_records = 0;  // stop after this many acknowledged records (0: run --seconds)
  bool cbor = false;
};

// CBOR (RFC 8949) heads, written here so that the client shares no code with the server.
void CborHead(std::string* out, int major, uint64_t n) {
  auto mt = static_cast<char>(major << 5);
  if (n < 24) {
    out->push_back(static_cast<char>(mt | static_cast<char>(n)));
    return;
  }
  int bytes = n <= 0xff ? 1 : n <= 0xffff ? 2 : n <= 0xffffffffu ? 4 : 8;
  out->push_back(static_cast<char>(mt | (bytes == 1   ? 24
                                         : bytes == 2 ? 25
                                         : bytes == 4 ? 26
                                                      : 27)));
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((n >> (8 * i)) & 0xff));
}
void CborText(std::string* out, const std::string& s) {
  CborHead(out, 3, s.size());
  *out += s;
}

// A JSON object of about `size` bytes: a few typed fields and a random text field.
std::string JsonRecord(std::mt19937_64& rng, int size, long id) {
  static constexpr char kAlnum[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ";
  std::string r = "{\"id\":" + std::to_string(id) + ",\"user\":\"user-" +
                  std::to_string(rng() % 100000) +
                  "\",\"amount\":" + std::to_string(rng() % 100000) + "." +
                  std::to_string(rng() % 100) + ",\"currency\":\"EUR\",\"note\":\"";
  while (static_cast<int>(r.size()) < size - 2) r.push_back(kAlnum[rng() % (sizeof(kAlnum) - 1)]);
  r += "\"}";
  return r;
}

std::string MakeRequest(const Options& o, std::mt19937_64& rng) {
  static long next_id = 0;
  std::string body;
  if (o.cbor) {
    CborHead(&body, 5, 2);
    CborText(&body, "StreamName");
    CborText(&body, o.stream);
    CborText(&body, "Records");
    CborHead(&body, 4, static_cast<uint64_t>(o.records));
  } else {
    body = "{\"StreamName\":\"" + o.stream + "\",\"Records\":[";
  }
  std::string data(static_cast<size_t>(o.record_size), '\0');
  for (int i = 0; i < o.records; ++i) {
    if (o.json) {
      data = JsonRecord(rng, o.record_size, next_id++);
    } else {
      for (auto& c : data) c = static_cast<char>(rng());
    }
    std::string pk = "pk-" + std::to_string(rng() % 100000);
    if (o.cbor) {
      CborHead(&body, 5, 2);
      CborText(&body, "Data");
      CborHead(&body, 2, data.size());
      body += data;
      CborText(&body, "PartitionKey");
      CborText(&body, pk);
      continue;
    }
    if (i) body += ',';
    body += "{\"Data\":\"";
    icestream::base64::EncodeAppend(data.data(), data.size(), &body);
    body += "\",\"PartitionKey\":\"" + pk + "\"}";
  }
  if (!o.cbor) body += "]}";
  std::string req =
      "POST / HTTP/1.1\r\nHost: " + o.host + ":" + std::to_string(o.port) + "\r\nContent-Type: " +
      std::string(o.cbor ? "application/x-amz-cbor-1.1" : "application/x-amz-json-1.1") +
      "\r\n"
      "X-Amz-Target: Kinesis_20131202.PutRecords\r\n"
      "X-Amz-Date: 20260101T000000Z\r\n"
      "Authorization: AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/kinesis/"
      "aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, "
      "Signature=0000000000000000000000000000000000000000000000000000000000000000\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  return req;
}

int Connect(const Options& o) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(o.port));
  inet_pton(AF_INET, o.host.c_str(), &a.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    perror("connect");
    std::exit(2);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Reads one HTTP response; returns the status and whether the body reports no failures.
bool ReadResponse(int fd, std::string& buf, bool cbor, int* status, bool* all_ok) {
  buf.clear();
  size_t header_end = std::string::npos;
  char tmp[65536];
  while (header_end == std::string::npos) {
    ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
    header_end = buf.find("\r\n\r\n");
  }
  *status = std::atoi(buf.c_str() + 9);
  size_t len = 0;
  std::string lower = buf.substr(0, header_end);
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  size_t cl = lower.find("content-length:");
  if (cl != std::string::npos) len = std::strtoul(lower.c_str() + cl + 15, nullptr, 10);
  while (buf.size() < header_end + 4 + len) {
    ssize_t n = recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<size_t>(n));
  }
  std::string body = buf.substr(header_end + 4, len);
  // CBOR: the text key (0x71 = text of 17 bytes) followed by the integer 0 (0x00).
  *all_ok = cbor ? body.find(std::string("\x71"
                                         "FailedRecordCount\x00",
                                         19)) != std::string::npos
                 : body.find("\"FailedRecordCount\":0") != std::string::npos;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--host")
      o.host = v;
    else if (k == "--port")
      o.port = std::atoi(v.c_str());
    else if (k == "--stream")
      o.stream = v;
    else if (k == "--connections")
      o.connections = std::atoi(v.c_str());
    else if (k == "--seconds")
      o.seconds = std::atof(v.c_str());
    else if (k == "--records")
      o.records = std::atoi(v.c_str());
    else if (k == "--record-size")
      o.record_size = std::atoi(v.c_str());
    else if (k == "--bodies")
      o.bodies = std::atoi(v.c_str());
    else if (k == "--warmup")
      o.warmup = std::atof(v.c_str());
    else if (k == "--json")
      o.json = v == "1" || v == "true";
    else if (k == "--total-records")
      o.total_records = std::atol(v.c_str());
    else if (k == "--cbor")
      o.cbor = v == "1" || v == "true";
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::mt19937_64 rng(1);
  std::vector<std::string> requests;
  for (int i = 0; i < o.bodies; ++i) requests.push_back(MakeRequest(o, rng));

  using Clock = std::chrono::steady_clock;
  std::atomic<bool> measuring{false}, stop{false};
  std::atomic<long> acked_records{0};
  std::atomic<long> failed_requests{0};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(o.connections));
  std::vector<long> ok_requests(static_cast<size_t>(o.connections), 0);
  std::vector<std::thread> threads;
  for (int c = 0; c < o.connections; ++c) {
    threads.emplace_back([&, c] {
      int fd = Connect(o);
      std::string buf;
      size_t next = static_cast<size_t>(c);
      while (!stop.load()) {
        const std::string& req = requests[next++ % requests.size()];
        auto t0 = Clock::now();
        size_t sent = 0;
        while (sent < req.size()) {
          ssize_t n = send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
          if (n <= 0) {
            failed_requests++;
            return;
          }
          sent += static_cast<size_t>(n);
        }
        int status = 0;
        bool all_ok = false;
        if (!ReadResponse(fd, buf, o.cbor, &status, &all_ok)) {
          failed_requests++;
          return;
        }
        double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (o.total_records > 0 && status == 200 && all_ok) {
          if (acked_records.fetch_add(o.records) + o.records >= o.total_records) stop = true;
        }
        if (!measuring.load()) continue;
        if (status != 200 || !all_ok) {
          failed_requests++;
          continue;
        }
        ok_requests[static_cast<size_t>(c)]++;
        latencies[static_cast<size_t>(c)].push_back(ms);
      }
      close(fd);
    });
  }
  if (o.total_records > 0) {
    // Fill mode: measure from the start until the total is acknowledged.
    measuring = true;
  } else {
    std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup));
    measuring = true;
  }
  auto t0 = Clock::now();
  if (o.total_records > 0) {
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } else {
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  }
  measuring = false;
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  stop = true;
  for (auto& t : threads) t.join();

  std::vector<double> all;
  long reqs = 0;
  for (size_t c = 0; c < latencies.size(); ++c) {
    all.insert(all.end(), latencies[c].begin(), latencies[c].end());
    reqs += ok_requests[c];
  }
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) {
    return all.empty() ? 0.0 : all[std::min(all.size() - 1, static_cast<size_t>(p * all.size()))];
  };
  double records = static_cast<double>(reqs) * o.records;
  double mb = records * o.record_size / 1e6;
  std::printf(
      "{\"requests\":%ld,\"failed_requests\":%ld,\"records\":%.0f,\"seconds\":%.2f,"
      "\"records_per_s\":%.0f,\"payload_mb_per_s\":%.2f,\"p50_ms\":%.2f,\"p99_ms\":%.2f}\n",
      reqs, failed_requests.load(), records, elapsed, records / elapsed, mb / elapsed, pct(0.5),
      pct(0.99));
  return 0;
}
