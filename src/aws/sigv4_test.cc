#include "aws/sigv4.h"

#include <gtest/gtest.h>

#include "common/crypto.h"
#include "common/testing/status_assertions.h"
#include "common/time_format.h"

namespace icestream::aws {
namespace {

// The worked example of the AWS General Reference (IAM ListUsers, 2015-08-30).
TEST(SigV4Test, DocumentedExample) {
  std::vector<http::Header> headers = {
      {"content-type", "application/x-www-form-urlencoded; charset=utf-8"},
      {"host", "iam.amazonaws.com"},
      {"x-amz-date", "20150830T123600Z"}};
  std::string empty_hash = crypto::Hex(crypto::Sha256(""));
  CanonicalInput in{"GET", "/", "Action=ListUsers&Version=2010-05-08", &headers, empty_hash};
  std::string canonical = CanonicalRequest(in, {"content-type", "host", "x-amz-date"});
  EXPECT_EQ(crypto::Hex(crypto::Sha256(canonical)),
            "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59");
  EXPECT_EQ(ComputeSignature("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830", "us-east-1",
                             "iam", "20150830T123600Z", canonical),
            "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7");
}

TEST(SigV4Test, ParseAuthorization) {
  ASSERT_OK_AND_ASSIGN(
      auto p, ParseAuthorization(
                  "AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/kinesis/aws4_request, "
                  "SignedHeaders=content-type;host;x-amz-date, Signature=abcd"));
  EXPECT_EQ(p.access_key_id, "AKID");
  EXPECT_EQ(p.service, "kinesis");
  EXPECT_EQ(p.signed_headers.size(), 3u);
  EXPECT_STATUS(kInvalidArgument,
                ParseAuthorization("AWS4-HMAC-SHA256 Credential=AKID/x/aws4_request"));
  EXPECT_STATUS(kInvalidArgument, ParseAuthorization("Basic Zm9v"));
}

constexpr int64_t kNow = 1700000000000;

http::Request SignedKinesisRequest(std::string body, int64_t when_ms = kNow,
                                   std::string region = "us-east-1",
                                   std::string service = "kinesis") {
  http::Request req;
  req.method = "POST";
  req.path = "/";
  req.body = std::move(body);
  req.headers = {{"host", "127.0.0.1:4567"},
                 {"content-type", "application/x-amz-json-1.1"},
                 {"x-amz-target", "Kinesis_20131202.DescribeStream"}};
  SignRequest("POST", "/", "", &req.headers, crypto::Hex(crypto::Sha256(req.body)),
              Credentials{"AKTEST", "secret", ""}, region, service, when_ms);
  return req;
}

std::string Header(const http::Request& r, std::string_view name) {
  return std::string(r.GetHeader(name));
}

void SetHeader(http::Request* r, const std::string& name, const std::string& value) {
  for (auto& h : r->headers) {
    if (h.name == name) {
      h.value = value;
      return;
    }
  }
  r->headers.push_back({name, value});
}

struct Fixture {
  ManualClock clock{kNow};
  Authenticator strict{
      AuthenticatorOptions{{{"AKTEST", "secret"}}, "us-east-1", 15 * 60 * 1000, &clock}};
  Authenticator lenient{AuthenticatorOptions{{}, "us-east-1", 15 * 60 * 1000, &clock}};
};

TEST(SigV4Test, VerifiesKeyAndSecret) {
  Fixture f;
  auto req = SignedKinesisRequest(R"({"StreamName":"s"})");
  EXPECT_FALSE(f.strict.Check(req, "kinesis").has_value());
  Authenticator wrong(AuthenticatorOptions{{{"AKTEST", "other"}}, "us-east-1", 900000, &f.clock});
  EXPECT_EQ(wrong.Check(req, "kinesis")->type, "InvalidSignatureException");
  Authenticator unknown(
      AuthenticatorOptions{{{"AKOTHER", "secret"}}, "us-east-1", 900000, &f.clock});
  EXPECT_EQ(unknown.Check(req, "kinesis")->type, "UnrecognizedClientException");
}

// The JS SDK's HTTP/2 handler signs the :authority pseudo-header, not host (the HTTP/2
// server passes :authority on as a header of that name).
TEST(SigV4Test, AuthorityPseudoHeaderSignedInsteadOfHost) {
  Fixture f;
  http::Request req;
  req.method = "POST";
  req.path = "/";
  req.body = "{}";
  req.headers = {{":authority", "127.0.0.1:4567"},
                 {"content-type", "application/x-amz-json-1.1"},
                 {"x-amz-target", "Kinesis_20131202.ListStreams"}};
  SignRequest("POST", "/", "", &req.headers, crypto::Hex(crypto::Sha256(req.body)),
              Credentials{"AKTEST", "secret", ""}, "us-east-1", "kinesis", kNow);
  EXPECT_NE(Header(req, "authorization").find("SignedHeaders=:authority;"), std::string::npos)
      << Header(req, "authorization");
  EXPECT_FALSE(f.strict.Check(req, "kinesis").has_value());
  http::Request elsewhere = req;
  SetHeader(&elsewhere, ":authority", "other.example:4567");
  EXPECT_EQ(f.strict.Check(elsewhere, "kinesis")->type, "InvalidSignatureException");
}

// A captured request replayed with another body fails, even when the attacker also sends
// the new body's hash (or keeps the old one) in x-amz-content-sha256.
TEST(SigV4Test, BodyIsBound) {
  Fixture f;
  auto req = SignedKinesisRequest(R"({"StreamName":"s"})");
  http::Request tampered = req;
  tampered.body = R"({"StreamName":"t"})";
  EXPECT_EQ(f.strict.Check(tampered, "kinesis")->type, "InvalidSignatureException");
  SetHeader(&tampered, "x-amz-content-sha256", crypto::Hex(crypto::Sha256(tampered.body)));
  EXPECT_EQ(f.strict.Check(tampered, "kinesis")->type, "InvalidSignatureException");
  // Without credentials no signature can be checked: the lenient mode takes it.
  EXPECT_FALSE(f.lenient.Check(tampered, "kinesis").has_value());
}

TEST(SigV4Test, UnsignedPayloadIsRefusedInEveryMode) {
  Fixture f;
  auto req = SignedKinesisRequest("{}");
  SetHeader(&req, "x-amz-content-sha256", "UNSIGNED-PAYLOAD");
  EXPECT_NE(f.strict.Check(req, "kinesis")->message.find("UNSIGNED-PAYLOAD"), std::string::npos);
  EXPECT_EQ(f.lenient.Check(req, "kinesis")->type, "InvalidSignatureException");
  SetHeader(&req, "x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
  EXPECT_EQ(f.lenient.Check(req, "kinesis")->type, "InvalidSignatureException");
}

TEST(SigV4Test, ClockSkew) {
  Fixture f;
  constexpr int64_t kMin = 60 * 1000;
  auto old = SignedKinesisRequest("{}", kNow - 16 * kMin);
  auto err = f.strict.Check(old, "kinesis");
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->message.rfind("Signature expired: ", 0), 0u) << err->message;
  auto future = SignedKinesisRequest("{}", kNow + 16 * kMin);
  err = f.strict.Check(future, "kinesis");
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->message.rfind("Signature not yet current: ", 0), 0u) << err->message;
  EXPECT_FALSE(f.strict.Check(SignedKinesisRequest("{}", kNow - 14 * kMin), "kinesis").has_value());
  EXPECT_FALSE(f.strict.Check(SignedKinesisRequest("{}", kNow + 14 * kMin), "kinesis").has_value());
}

TEST(SigV4Test, DateHeaderInsteadOfXAmzDate) {
  Fixture f;
  http::Request req;
  req.method = "POST";
  req.path = "/";
  req.body = "{}";
  req.headers = {{"host", "h"}, {"date", FormatHttpDate(kNow)}};
  std::string iso = FormatAmzDate(kNow);
  std::string body_hash = crypto::Hex(crypto::Sha256(req.body));
  CanonicalInput in{"POST", "/", "", &req.headers, body_hash};
  std::string sig = ComputeSignature("secret", iso.substr(0, 8), "us-east-1", "kinesis", iso,
                                     CanonicalRequest(in, {"date", "host"}));
  req.headers.push_back({"authorization", "AWS4-HMAC-SHA256 Credential=AKTEST/" + iso.substr(0, 8) +
                                              "/us-east-1/kinesis/aws4_request, "
                                              "SignedHeaders=date;host, Signature=" +
                                              sig});
  auto err = f.strict.Check(req, "kinesis");
  EXPECT_FALSE(err.has_value()) << err->message;
}

TEST(SigV4Test, ScopeMustNameThisServiceAndRegion) {
  Fixture f;
  auto glue = SignedKinesisRequest("{}", kNow, "us-east-1", "glue");
  auto err = f.strict.Check(glue, "kinesis");
  ASSERT_TRUE(err.has_value());
  EXPECT_NE(err->message.find("'kinesis'"), std::string::npos);
  EXPECT_TRUE(f.lenient.Check(glue, "kinesis").has_value());
  auto eu = SignedKinesisRequest("{}", kNow, "eu-west-1");
  err = f.lenient.Check(eu, "kinesis");
  ASSERT_TRUE(err.has_value());
  EXPECT_NE(err->message.find("not 'eu-west-1'"), std::string::npos) << err->message;
  EXPECT_TRUE(f.strict.Check(eu, "kinesis").has_value());
}

TEST(SigV4Test, BindingHeadersMustBeSigned) {
  Fixture f;
  auto req = SignedKinesisRequest("{}");
  std::string auth = Header(req, "authorization");
  auto without = [&](const std::string& name) {
    http::Request r = req;
    std::string a = auth;
    size_t at = a.find(name + ";");
    if (at == std::string::npos) at = a.find(";" + name);
    a.erase(at, name.size() + 1);
    SetHeader(&r, "authorization", a);
    return r;
  };
  EXPECT_NE(f.strict.Check(without("host"), "kinesis")->message.find("'Host'"), std::string::npos);
  EXPECT_NE(f.strict.Check(without("x-amz-target"), "kinesis")->message.find("'X-Amz-Target'"),
            std::string::npos);
  EXPECT_NE(f.strict.Check(without("x-amz-date"), "kinesis")->message.find("'X-Amz-Date'"),
            std::string::npos);
}

TEST(SigV4Test, NonS3PathsAreEncodedTwice) {
  Fixture f;
  http::Request req;
  req.method = "GET";
  req.path = "/iceberg/v1/namespaces/a%1Fb";
  req.headers = {{"host", "h"}};
  SignRequest("GET", "/iceberg/v1/namespaces/a%251Fb", "", &req.headers,
              crypto::Hex(crypto::Sha256("")), Credentials{"AKTEST", "secret", ""}, "us-east-1",
              "s3tables", kNow);
  EXPECT_FALSE(f.strict.Check(req, "s3tables").has_value());
  req.path = "/iceberg/v1/namespaces/a%1Fc";
  EXPECT_TRUE(f.strict.Check(req, "s3tables").has_value());
}

TEST(SigV4Test, MalformedAndPresigned) {
  Fixture f;
  http::Request unsigned_req;
  EXPECT_EQ(f.lenient.Check(unsigned_req, "kinesis")->type, "MissingAuthenticationTokenException");
  unsigned_req.headers = {{"authorization", "AWS4-HMAC-SHA256 Credential=A/B"}};
  EXPECT_EQ(f.lenient.Check(unsigned_req, "kinesis")->type, "IncompleteSignatureException");
  // An incomplete query-string signature names every missing parameter (AWS's text).
  http::Request partial;
  partial.query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=00&X-Amz-Date=";
  auto e = f.lenient.Check(partial, "kinesis");
  EXPECT_EQ(e->type, "IncompleteSignatureException");
  EXPECT_EQ(e->message,
            "AWS query-string parameters must include 'X-Amz-Credential'. AWS query-string "
            "parameters must include 'X-Amz-SignedHeaders'. AWS query-string parameters must "
            "include 'X-Amz-Date'. Re-examine the query-string parameters.");
  // A complete one is refused: presigning is not supported.
  http::Request presigned;
  presigned.query =
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKTEST%2F20260101%2Fus-east-1%2Fkinesis"
      "%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-SignedHeaders=host&X-Amz-Signature=00";
  EXPECT_EQ(f.lenient.Check(presigned, "kinesis")->type, "InvalidSignatureException");
  EXPECT_EQ(f.strict.Check(presigned, "kinesis")->type, "InvalidSignatureException");
  // Both forms at once.
  presigned.headers = {{"authorization", "AWS4-HMAC-SHA256 Credential=A/B"}};
  EXPECT_EQ(f.lenient.Check(presigned, "kinesis")->message,
            "Found both 'X-Amz-Algorithm' as a query-string param and 'Authorization' as HTTP "
            "header.");
}

}  // namespace
}  // namespace icestream::aws
