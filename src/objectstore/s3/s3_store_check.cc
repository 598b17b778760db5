// s3_store_check ENDPOINT BUCKET: exercises S3ObjectStore against a real S3 server —
// put/get/range/head/list (with paging)/delete, multipart, If-None-Match, SSE-KMS and
// expected-owner headers, error mapping. Prints "ok" and exits 0 when every check holds.
// Credentials come from the environment. Driven by tests/interop/test_s3_store.py.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "objectstore/s3/s3_store.h"

using namespace icestream;
using namespace icestream::objectstore;
using namespace icestream::objectstore::s3;

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::fprintf(stderr, "check failed at line %d: %s\n", __LINE__, #cond); \
      return 1;                                                               \
    }                                                                         \
  } while (0)

#define CHECK_OK(expr)                                                        \
  do {                                                                        \
    auto _s = (expr);                                                         \
    if (!_s.ok()) {                                                           \
      std::fprintf(stderr, "line %d: %s\n", __LINE__, _s.ToString().c_str()); \
      return 1;                                                               \
    }                                                                         \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: s3_store_check ENDPOINT BUCKET [KMS_KEY_ID] [OWNER]\n");
    return 2;
  }
  S3Options o;
  o.endpoint = argv[1];
  o.credentials = CredentialsFromEnvironment();
  o.multipart_threshold = 6 << 20;
  o.part_size = 5 << 20;
  o.max_attempts = 3;
  std::string bucket = argv[2];
  std::string kms = argc > 3 ? argv[3] : "";
  std::string owner = argc > 4 ? argv[4] : "";
  S3ObjectStore s3(o);

  CHECK_OK(s3.CheckBucket(bucket));
  CHECK(s3.CheckBucket("no-such-bucket-icestream").code() == StatusCode::kNotFound);
  CHECK_OK(s3.Put(bucket, "dir/a b+c.txt", "hello world", {.content_type = "text/plain"}));
  auto got = s3.Get(bucket, "dir/a b+c.txt");
  CHECK_OK(got.status());
  CHECK(*got == "hello world");
  CHECK(*s3.GetRange(bucket, "dir/a b+c.txt", 6, 5) == "world");
  CHECK(s3.Head(bucket, "dir/a b+c.txt")->size == 11);
  CHECK(s3.Get(bucket, "dir/missing").status().code() == StatusCode::kNotFound);
  CHECK(s3.Head(bucket, "dir/missing").status().code() == StatusCode::kNotFound);

  // Conditional create.
  CHECK_OK(s3.Put(bucket, "cond", "1", {.if_none_match = true}));
  CHECK(s3.Put(bucket, "cond", "2", {.if_none_match = true}).code() == StatusCode::kConflict);
  CHECK(*s3.Get(bucket, "cond") == "1");

  // Multipart: 13 MiB in 5 MiB parts, with a storage class.
  std::string big(13 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + (i >> 12));
  CHECK_OK(s3.Put(bucket, "big/object.bin", big, {.storage_class = "STANDARD"}));
  auto back = s3.Get(bucket, "big/object.bin");
  CHECK_OK(back.status());
  CHECK(*back == big);
  CHECK(*s3.GetRange(bucket, "big/object.bin", (5 << 20) - 3, 6) == big.substr((5 << 20) - 3, 6));

  // Listing with more than one page.
  for (int i = 0; i < 1005; ++i) {
    char k[64];
    std::snprintf(k, sizeof k, "many/%05d", i);
    CHECK_OK(s3.Put(bucket, k, "x"));
  }
  auto list = s3.List(bucket, "many/");
  CHECK_OK(list.status());
  CHECK(list->size() == 1005);
  CHECK(list->front().key == "many/00000" && list->back().key == "many/01004");
  CHECK(s3.List(bucket, "dir/")->size() == 1);

  if (!kms.empty()) {
    CHECK_OK(s3.Put(bucket, "enc/k", "secret",
                    {.server_side_encryption = "aws:kms", .sse_kms_key_id = kms}));
    CHECK(*s3.Get(bucket, "enc/k") == "secret");
  }
  if (!owner.empty()) {
    CHECK_OK(s3.Put(bucket, "own/k", "v", {.expected_bucket_owner = owner}));
  }
  CHECK_OK(s3.Delete(bucket, "dir/a b+c.txt"));
  CHECK_OK(s3.Delete(bucket, "dir/a b+c.txt"));
  CHECK(s3.Get(bucket, "dir/a b+c.txt").status().code() == StatusCode::kNotFound);
  std::printf("ok (%llu requests, %llu retries)\n",
              static_cast<unsigned long long>(s3.requests_sent()),
              static_cast<unsigned long long>(s3.retries()));
  return 0;
}
