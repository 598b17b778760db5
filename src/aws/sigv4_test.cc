#include "aws/sigv4.h"

#include <gtest/gtest.h>

#include "common/crypto.h"

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
  auto p = ParseAuthorization(
      "AWS4-HMAC-SHA256 Credential=AKID/20240101/us-east-1/kinesis/aws4_request, "
      "SignedHeaders=content-type;host;x-amz-date, Signature=abcd");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->access_key_id, "AKID");
  EXPECT_EQ(p->service, "kinesis");
  EXPECT_EQ(p->signed_headers.size(), 3u);
  EXPECT_FALSE(ParseAuthorization("AWS4-HMAC-SHA256 Credential=AKID/x/aws4_request").ok());
  EXPECT_FALSE(ParseAuthorization("Basic Zm9v").ok());
}

TEST(SigV4Test, SignThenVerifyAndTamper) {
  http::Request req;
  req.method = "POST";
  req.path = "/";
  req.body = R"({"StreamName":"s"})";
  req.headers = {{"host", "127.0.0.1:4567"}, {"content-type", "application/x-amz-json-1.1"},
                 {"x-amz-target", "Kinesis_20131202.DescribeStream"}};
  Credentials creds{"AKTEST", "secret", ""};
  SignRequest("POST", "/", "", &req.headers, crypto::Hex(crypto::Sha256(req.body)), creds,
              "us-east-1", "kinesis", 1700000000000);
  Authenticator strict(std::map<std::string, std::string>{{"AKTEST", "secret"}});
  EXPECT_FALSE(strict.Check(req).has_value());
  Authenticator wrong(std::map<std::string, std::string>{{"AKTEST", "other"}});
  EXPECT_EQ(wrong.Check(req)->type, "InvalidSignatureException");
  Authenticator unknown(std::map<std::string, std::string>{{"AKOTHER", "secret"}});
  EXPECT_EQ(unknown.Check(req)->type, "UnrecognizedClientException");
  http::Request tampered = req;
  tampered.body = R"({"StreamName":"t"})";
  for (auto& h : tampered.headers) {
    if (h.name == "x-amz-content-sha256") h.value = crypto::Hex(crypto::Sha256(tampered.body));
  }
  EXPECT_EQ(strict.Check(tampered)->type, "InvalidSignatureException");
  Authenticator lenient;
  EXPECT_FALSE(lenient.Check(tampered).has_value());
  http::Request unsigned_req;
  EXPECT_EQ(lenient.Check(unsigned_req)->type, "MissingAuthenticationTokenException");
  unsigned_req.headers = {{"authorization", "AWS4-HMAC-SHA256 Credential=A/B"}};
  EXPECT_EQ(lenient.Check(unsigned_req)->type, "IncompleteSignatureException");
}

}  // namespace
}  // namespace icestream::aws
