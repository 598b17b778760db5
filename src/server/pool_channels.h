// `icestream channels … --pg CONNINFO`: the channel API run in this process against a
// pool's PostgreSQL delivery store, for pools whose streams live on another Kinesis
// endpoint (kinesalite, AWS Kinesis) that has no channel API of its own. The requests go
// through the same handlers as the server's (src/kinesis/handlers/channels.cc), so the
// validation and the AWS-shaped errors are the same; the stream is checked against the
// source endpoint (DescribeStreamSummary through the Kinesis client) when one is given. Channel
// rows are written as a server writes them: the pool's workers activate, deliver and delete them.
// The process joins the pool as an observer (LeaseManager::Observe): it holds no unit and
// delivers nothing.
//
// Thread-safety: one call at a time.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"
#include "http/client.h"

namespace icestream::server {

struct PoolChannelFlags {
  std::string pg;      // the pool's conninfo ([scaleout] pg)
  std::string source;  // the Kinesis endpoint the streams are read from ([scaleout] source)
  std::string source_ca_file;
  std::string registry;     // the Glue API for table channels' schemas (default: the source)
  std::string s3_endpoint;  // the buckets' store (default: folders under the data dir)
  std::string config_file;
};

class PoolChannelApi {
 public:
  // kInvalidArgument for a missing --pg or a bad configuration; kUnavailable when
  // PostgreSQL cannot be reached. Without a source (--source, [scaleout] source) the
  // channels are read from the pool's rows alone (pool_rows_source.h): CreateChannel
  // answers InvalidArgumentException naming --source, a describe has no lag.
  static Result<std::unique_ptr<PoolChannelApi>> Open(const PoolChannelFlags& flags);
  ~PoolChannelApi();

  // `target` "Kinesis_20131202.<Op>": the channel operations in process; any other
  // Kinesis operation (DescribeStreamSummary for --stream-name) is sent to the source.
  Result<http::ClientResponse> Call(std::string_view target, const nlohmann::json& body);
  // The ARN of stream `name`: the source's DescribeStreamSummary, or without a source the
  // ARN of that name in the configuration's region and account.
  Result<std::string> StreamArn(const std::string& name);
  // "the pool's database (<source> as source)" (for messages).
  std::string endpoint() const;

 private:
  struct Impl;
  explicit PoolChannelApi(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace icestream::server
