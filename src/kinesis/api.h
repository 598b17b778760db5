// KinesisApi: the Kinesis Data Streams API (JSON 1.1, `X-Amz-Target:
// Kinesis_20131202.<Op>`) over the stream manager. One handler file per API family in
// handlers/; this class only parses the body and dispatches.
//
// Thread-safety: Handle may be called from any number of threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "aws/cbor.h"
#include "aws/error.h"
#include "common/clock.h"
#include "http/message.h"
#include "stream/stream_manager.h"

namespace icestream::kinesis {

struct KinesisOptions {
  std::string region = "us-east-1";
  std::string account = "000000000000";
  // Enforce every AWS limit exactly (see README); off by default.
  bool aws_strict = false;
  int64_t iterator_ttl_ms = 300 * 1000;
  int64_t next_token_ttl_ms = 300 * 1000;
  // Threads that push SubscribeToShard events, all subscriptions together (0: one per
  // core, at least 2).
  size_t subscription_threads = 0;
};

struct Context;
}  // namespace icestream::kinesis

namespace icestream::delivery {
class ChannelManager;
}
namespace icestream::metrics {
class StreamMetrics;
}

namespace icestream::kinesis {

class KinesisApi {
 public:
  // `post` runs a function on an I/O thread; used to build responses off the log threads.
  KinesisApi(KinesisOptions options, stream::StreamManager* streams, const Clock* clock,
             std::string token_secret, std::function<void(std::function<void()>)> post);
  ~KinesisApi();

  // `op` is the operation name after "Kinesis_20131202.". The envelope (method, content
  // type) has been checked by the caller and the body is JSON 1.1 text (CBOR bodies are
  // transcoded before, except for DecodesCborItself operations). `auth_error` is the authentication
  // verdict (null: authenticated); it is reported in AWS's order: after the body's type checks
  // (SerializationException) and model validation (ValidationException), before any service check.
  void Handle(std::string_view op, std::shared_ptr<http::Request> req, http::Responder respond,
              std::optional<aws::ApiError> auth_error = std::nullopt);
  bool Knows(std::string_view op) const;
  // The Kinesis model's blob and timestamp members, for the CBOR codec (aws/cbor.h).
  static const aws::CborModel& CborModel();
  // Operations whose CBOR request bodies reach Handle() as CBOR (no JSON transcoding):
  // the data-plane hot path, PutRecords, reads them in place.
  static bool DecodesCborItself(std::string_view op);

  // Enables the channel operations (CreateChannel, ...) and the channel fields of
  // DescribeStreamSummary/DescribeLimits; DeleteStream then refuses streams with channels.
  void SetChannels(delivery::ChannelManager* channels);
  // Enables the stream metrics (IncomingBytes, GetRecords.*, ...) the data-plane
  // handlers count; `metrics` must outlive this object.
  void SetMetrics(metrics::StreamMetrics* metrics);
  // Ends every SubscribeToShard subscription and joins their threads. Call after the
  // HTTP server stopped and before the stream manager stops.
  void StopSubscriptions();

 private:
  std::unique_ptr<Context> ctx_;
};

}  // namespace icestream::kinesis
