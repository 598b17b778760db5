// Amazon Resource Names: arn:partition:service:region:account-id:resource (AWS General
// Reference, "Amazon Resource Names (ARNs)"). The one parser and printer for every ARN the
// server reads or writes: streams, consumers and channels (kinesis), buckets (s3), table
// buckets (s3tables), registries and schemas (glue).
//
//   arn:aws:kinesis:us-east-1:000000000000:stream/orders/consumer/c:1700000000
//   \_/ \_/ \_____/ \_______/ \__________/ \__________________________________/
//       partition  region     account      resource (may hold ':' and '/')
//       service
//
// Header-only, so that the libraries below the AWS front end (stream, objectstore,
// iceberg, registry) use it without linking aws's HTTP pieces.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace icestream::aws {

struct Arn {
  std::string partition;  // "aws", "aws-cn", "aws-us-gov"
  std::string service;    // "kinesis", "s3", "s3tables", "glue", "iam"
  std::string region;     // empty for global resources (S3 buckets, IAM roles)
  std::string account;    // 12 digits; empty for S3 buckets
  std::string resource;   // everything after the fifth ':'

  std::string ToString() const {
    return "arn:" + partition + ":" + service + ":" + region + ":" + account + ":" + resource;
  }
  // The resource's type, before its first '/': "stream" of "stream/orders". Empty when the
  // resource has no '/' (an S3 bucket's name).
  std::string_view ResourceType() const {
    size_t slash = resource.find('/');
    return slash == std::string::npos ? std::string_view()
                                      : std::string_view(resource).substr(0, slash);
  }
  // The resource after its type: "orders/consumer/c:1" of "stream/orders/consumer/c:1";
  // the whole resource when it has no type.
  std::string_view ResourceId() const {
    size_t slash = resource.find('/');
    return slash == std::string::npos ? std::string_view(resource)
                                      : std::string_view(resource).substr(slash + 1);
  }
  // Whether this is an ARN of `service` whose resource type is `type` ("" for none).
  bool Is(std::string_view service_name, std::string_view type) const {
    return service == service_name && ResourceType() == type;
  }
  bool operator==(const Arn&) const = default;
};

// The fields of `text`, or nullopt unless it is "arn:" followed by five ':'-separated
// fields with a partition, a service and a resource (region and account may be empty). The
// resource keeps any further ':' (consumer ARNs end in ":<creation time>"). Checks no
// service's rules: callers check the service, the resource type and the account they need.
inline std::optional<Arn> ParseArn(std::string_view text) {
  if (!text.starts_with("arn:")) return std::nullopt;
  text.remove_prefix(4);
  std::string_view field[4];
  for (auto& f : field) {
    size_t colon = text.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    f = text.substr(0, colon);
    text.remove_prefix(colon + 1);
  }
  if (field[0].empty() || field[1].empty() || text.empty()) return std::nullopt;
  return Arn{std::string(field[0]), std::string(field[1]), std::string(field[2]),
             std::string(field[3]), std::string(text)};
}

}  // namespace icestream::aws
