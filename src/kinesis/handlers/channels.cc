// Channels: CreateChannel, DescribeChannel, ListChannels, UpdateChannel, DeleteChannel
// (kds-delivery-spec.md §1), and icestream's extensions ResumeChannel, StartChannelRedrive
// and DescribeChannelRedrive (docs/channels.md). Model constraints → ValidationException;
// semantic rules → InvalidArgumentException; the rest comes from the delivery engine's
// statuses.
#include <fmt/format.h>

#include "common/pattern.h"
#include "delivery/channel_manager.h"
#include "delivery/redrive.h"
#include "kinesis/context.h"

namespace icestream::kinesis {

using delivery::ChannelConfig;
using nlohmann::json;

namespace {

const Pattern kRoleArn =
    Pattern::MustCompile(R"(arn:aws[-a-z0-9]*:iam::\d{12}:role/[a-zA-Z_0-9+=,.@\-_/]+)");
const Pattern kChannelArn = Pattern::MustCompile(R"(arn:aws.*:kinesis:.*:\d{12}:channel/\S+)");
const Pattern kGsrArn = Pattern::MustCompile(
    R"(arn:aws[-a-z0-9]*:glue:[-a-z0-9]+:\d{12}:schema/[-a-zA-Z0-9_$#.]+/[-a-zA-Z0-9_$#.]+)");
const Pattern kBucketArn = Pattern::MustCompile(R"(arn:aws[-a-z0-9]*:s3:::[a-z0-9._-]{3,63})");
const Pattern kTableBucketArn =
    Pattern::MustCompile(R"(arn:aws[-a-z0-9]*:s3tables:[-a-z0-9]+:\d{12}:bucket/[a-z0-9_-]{3,63})");
const Pattern kOwner = Pattern::MustCompile(R"(\d{12})");
const Pattern kSourceName = Pattern::MustCompile(R"([a-zA-Z0-9\.\_]+)");
const Pattern kTemplateChars = Pattern::MustCompile(R"([0-9A-Za-z!\-_'.*()\/=:{}]+)");
const Pattern kPrefixChars = Pattern::MustCompile(R"([0-9A-Za-z!\-_'.*()\/]+)");
const Pattern kLogGroup = Pattern::MustCompile(R"([\.\-_/#A-Za-z0-9]+)");
const Pattern kLowerName = Pattern::MustCompile(R"([0-9a-z_]+)");
const Pattern kErrorCode = Pattern::MustCompile(R"([A-Z][A-Z0-9_]*)");

void StrMember(aws::Params& p, const std::string& path, const std::optional<std::string>& v,
               bool required, size_t min, size_t max, const Pattern* re = nullptr) {
  if (required) p.Required(path, v.has_value());
  if (!v) return;
  if (re) p.Pattern(path, *v, re->Matches(*v), re->source());
  p.Length(path, *v, min, max);
}

bool Ok(Call& call, aws::Params& p) {
  if (auto e = p.Error()) {
    call.Fail(*e);
    return false;
  }
  return true;
}

json DescriptionJson(const ChannelConfig& c) {
  json stream = {
      {"StreamARN", c.stream_arn},
      {"StreamCreationTimestamp", EpochSeconds(c.stream_created_ms)},
      {"RecordConfiguration", {{"RecordFormatType", delivery::RecordFormatName(c.record_format)}}}};
  if (!c.gsr_schema_arn.empty()) stream["RecordConfiguration"]["GSRSchemaARN"] = c.gsr_schema_arn;
  json start = {{"Type", c.starting_position.type}};
  if (c.starting_position.type == "AT_TIMESTAMP") {
    start["Timestamp"] = EpochSeconds(c.starting_position.timestamp_ms);
  }
  stream["StartingPosition"] = start;  // icestream extension (docs/channels.md)
  json d = {{"ChannelARN", c.arn},
            {"ChannelCreationTimestamp", EpochSeconds(c.created_ms)},
            {"ChannelId", c.id},
            {"ChannelName", c.name},
            {"ChannelStatus", delivery::ChannelStatusName(c.status)},
            {"LoggingConfiguration",
             {{"CloudWatchLogs",
               {{"Enabled", c.logging.enabled},
                {"LogGroupName", c.logging.log_group_name},
                {"LogStreamName", c.logging.log_stream_name}}}}},
            {"ServiceExecutionRoleARN", c.role_arn},
            {"StreamConfigurationList", json::array({stream})}};
  if (!c.status_reason.empty()) d["ChannelStatusReason"] = c.status_reason;
  if (c.encryption) {
    d["EncryptionConfiguration"] = {{"EncryptionType", c.encryption->encryption_type},
                                    {"KeyId", c.encryption->key_id}};
  }
  json dlq = {{"BucketARN", c.dlq.bucket_arn},
              {"ExpectedBucketOwner", c.dlq.expected_bucket_owner},
              {"ErrorOutputPrefix", c.dlq.error_output_prefix}};
  if (c.dlq.include_record_data) dlq["IncludeRecordData"] = true;  // icestream extension
  if (c.destination_type() == delivery::DestinationType::kS3) {
    const auto& s3 = c.s3();
    d["S3DestinationConfiguration"] = {
        {"DataFreshnessInSeconds", c.data_freshness_seconds},
        {"DeadLetterQueueS3Configuration", dlq},
        {"StorageConfiguration",
         {{"BucketARN", s3.bucket_arn},
          {"CompressionType", delivery::CompressionName(s3.compression)},
          {"ExpectedBucketOwner", s3.expected_bucket_owner},
          {"OutputKeyTemplate", s3.output_key_template},
          {"StorageClass", s3.storage_class}}}};
  } else {
    const auto& t = c.table();
    json table = {{"TableBucketARN", t.table_bucket_arn},
                  {"Namespace", t.ns},
                  {"TableName", t.table_name},
                  {"CompressionType", delivery::TableCompressionName(t.compression)}};
    if (!t.partition_fields.empty()) {
      json fields = json::array();
      for (const auto& f : t.partition_fields)
        fields.push_back({{"SourceName", f.source_name}, {"Transform", f.transform}});
      table["PartitionSpec"] = {{"PartitionFields", fields}};
    }
    d["S3TablesDestinationConfiguration"] = {{"DataFreshnessInSeconds", c.data_freshness_seconds},
                                             {"DeadLetterQueueS3Configuration", dlq},
                                             {"S3TablesConfigurationList", json::array({table})}};
  }
  return d;
}

void CheckFreshness(const Context& ctx, aws::Params& p, const std::string& path,
                    const std::optional<int64_t>& v) {
  if (!v || !ctx.channels) return;
  p.Range(path, *v, ctx.channels->options().min_freshness_seconds,
          ctx.channels->options().max_freshness_seconds);
}

// True when a '/'-separated segment of `s` is "." or "..".
bool HasDotSegment(std::string_view s) {
  size_t start = 0;
  while (start <= s.size()) {
    size_t slash = s.find('/', start);
    std::string_view seg =
        s.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (seg == "." || seg == "..") return true;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return false;
}

// DeadLetterQueueS3Configuration.
void ReadDlq(aws::Params& p, const std::string& path, const json& j,
             delivery::DeadLetterQueueConfig* out) {
  aws::Params d(j);
  auto bucket = d.Str("BucketARN");
  auto owner = d.Str("ExpectedBucketOwner");
  auto prefix = d.Str("ErrorOutputPrefix");
  auto include_data = d.Bool("IncludeRecordData");  // icestream extension (docs/channels.md)
  if (auto e = d.Error()) return p.AddViolation(e->message);
  StrMember(p, path + ".bucketARN", bucket, true, 1, 2048, &kBucketArn);
  StrMember(p, path + ".expectedBucketOwner", owner, true, 12, 12, &kOwner);
  StrMember(p, path + ".errorOutputPrefix", prefix, false, 1, 512, &kPrefixChars);
  if (prefix && HasDotSegment(*prefix)) {  // it becomes part of object keys and file paths
    p.AddViolation(
        "Value '" + *prefix + "' at '" + path +
        ".errorOutputPrefix' failed to satisfy constraint: Member must not contain a '.' or '..' "
        "path segment");
  }
  out->bucket_arn = bucket.value_or("");
  out->expected_bucket_owner = owner.value_or("");
  out->error_output_prefix = prefix.value_or("");
  out->include_record_data = include_data.value_or(false);
}

std::optional<delivery::LoggingConfig> ReadLogging(aws::Params& p, const json* j) {
  if (!j) return std::nullopt;
  aws::Params lp(*j);
  const json* cw = lp.Struct("CloudWatchLogs");
  if (auto e = lp.Error()) {
    p.AddViolation(e->message);
    return std::nullopt;
  }
  p.Required("loggingConfiguration.cloudWatchLogs", cw != nullptr);
  if (!cw) return std::nullopt;
  aws::Params c(*cw);
  auto enabled = c.Bool("Enabled");
  auto group = c.Str("LogGroupName");
  auto stream = c.Str("LogStreamName");
  if (auto e = c.Error()) {
    p.AddViolation(e->message);
    return std::nullopt;
  }
  p.Required("loggingConfiguration.cloudWatchLogs.enabled", enabled.has_value());
  StrMember(p, "loggingConfiguration.cloudWatchLogs.logGroupName", group, false, 1, 512,
            &kLogGroup);
  if (stream) {
    p.Pattern("loggingConfiguration.cloudWatchLogs.logStreamName", *stream,
              stream->find_first_of(":*") == std::string::npos, "[^:*]*");
    p.Length("loggingConfiguration.cloudWatchLogs.logStreamName", *stream, 1, 512);
  }
  delivery::LoggingConfig out;
  out.enabled = enabled.value_or(false);
  out.log_group_name = group.value_or("");
  out.log_stream_name = stream.value_or("");
  return out;
}

std::optional<std::string> ChannelArnMember(aws::Params& p) {
  auto arn = p.Str("ChannelARN");
  StrMember(p, "channelARN", arn, true, 1, 2048, &kChannelArn);
  return arn;
}

bool Unavailable(Context& ctx, Call& call) {
  if (ctx.channels) return false;
  call.Fail(aws::InvalidArgumentError("Channels are not enabled on this server."));
  return true;
}

}  // namespace

void CreateChannel(Context& ctx, Call& call, aws::Params& p) {
  if (Unavailable(ctx, call)) return;
  auto name = p.Str("ChannelName");
  auto role = p.Str("ServiceExecutionRoleARN");
  const json* streams = p.List("StreamConfigurationList");
  const json* s3 = p.Struct("S3DestinationConfiguration");
  const json* tables = p.Struct("S3TablesDestinationConfiguration");
  const json* enc = p.Struct("EncryptionConfiguration");
  const json* logging = p.Struct("LoggingConfiguration");
  const json* tags = p.Map("Tags");
  if (!Ok(call, p)) return;
  StrMember(p, "channelName", name, true, 1, 128, nullptr);
  if (name) p.Pattern("channelName", *name, aws::MatchesNameChars(*name), "[a-zA-Z0-9_.-]+");
  if (name && (*name == "." || *name == "..")) {  // names become folder and key segments
    p.AddViolation(
        "Value '" + *name +
        "' at 'channelName' failed to satisfy constraint: Member must not be '.' or '..'");
  }
  StrMember(p, "serviceExecutionRoleARN", role, true, 1, 512, &kRoleArn);
  p.Required("streamConfigurationList", streams != nullptr);
  ChannelConfig c;
  std::optional<std::string> stream_arn;
  if (streams) {
    p.ListLength("streamConfigurationList", streams->size(), streams->dump(), 1, 10000);
    for (size_t i = 0; i < streams->size(); ++i) {
      std::string base = fmt::format("streamConfigurationList.{}.member", i + 1);
      if (!(*streams)[i].is_object())
        return call.Fail(aws::SerializationError("Start of list found where not expected"));
      aws::Params sp((*streams)[i]);
      auto arn = sp.Str("StreamARN");
      const json* rc = sp.Struct("RecordConfiguration");
      const json* start = sp.Struct("StartingPosition");
      if (auto e = sp.Error()) return call.Fail(*e);
      StrMember(p, base + ".streamARN", arn, true, 1, 2048, &StreamArnPattern());
      p.Required(base + ".recordConfiguration", rc != nullptr);
      if (rc) {
        aws::Params rp(*rc);
        auto fmt_type = rp.Str("RecordFormatType");
        auto gsr = rp.Str("GSRSchemaARN");
        if (auto e = rp.Error()) return call.Fail(*e);
        p.Required(base + ".recordConfiguration.recordFormatType", fmt_type.has_value());
        if (fmt_type) {
          p.Enum(base + ".recordConfiguration.recordFormatType", *fmt_type,
                 {"GSR_JSON", "JSON", "STRING", "BYTE_ARRAY"});
          if (i == 0)
            c.record_format =
                delivery::ParseRecordFormat(*fmt_type).value_or(delivery::RecordFormat::kJson);
        }
        StrMember(p, base + ".recordConfiguration.gSRSchemaARN", gsr, false, 1, 512, &kGsrArn);
        if (i == 0 && gsr) c.gsr_schema_arn = *gsr;
      }
      if (start) {
        aws::Params stp(*start);
        auto type = stp.Str("Type");
        auto ts = stp.TimestampMs("Timestamp");
        if (auto e = stp.Error()) return call.Fail(*e);
        p.Required(base + ".startingPosition.type", type.has_value());
        if (type)
          p.Enum(base + ".startingPosition.type", *type,
                 {"LATEST", "TRIM_HORIZON", "AT_TIMESTAMP"});
        if (i == 0 && type) c.starting_position = {*type, ts.value_or(0)};
      }
      if (i == 0) stream_arn = arn;
    }
  }
  if (s3) {
    aws::Params sp(*s3);
    const json* storage = sp.Struct("StorageConfiguration");
    auto freshness = sp.Int("DataFreshnessInSeconds");
    const json* dlq = sp.Struct("DeadLetterQueueS3Configuration");
    if (auto e = sp.Error()) return call.Fail(*e);
    p.Required("s3DestinationConfiguration.storageConfiguration", storage != nullptr);
    CheckFreshness(ctx, p, "s3DestinationConfiguration.dataFreshnessInSeconds", freshness);
    if (freshness) c.data_freshness_seconds = static_cast<int>(*freshness);
    c.destination = delivery::S3DestinationConfig{};
    if (storage) {
      aws::Params st(*storage);
      auto bucket = st.Str("BucketARN");
      auto comp = st.Str("CompressionType");
      auto owner = st.Str("ExpectedBucketOwner");
      auto tmpl = st.Str("OutputKeyTemplate");
      auto klass = st.Str("StorageClass");
      if (auto e = st.Error()) return call.Fail(*e);
      std::string b = "s3DestinationConfiguration.storageConfiguration.";
      StrMember(p, b + "bucketARN", bucket, true, 1, 2048, &kBucketArn);
      p.Required(b + "compressionType", comp.has_value());
      if (comp) p.Enum(b + "compressionType", *comp, {"NONE", "GZIP", "ZSTD"});
      StrMember(p, b + "expectedBucketOwner", owner, true, 12, 12, &kOwner);
      StrMember(p, b + "outputKeyTemplate", tmpl, false, 1, 1024, &kTemplateChars);
      if (klass)
        p.Enum(b + "storageClass", *klass, {"STANDARD", "INTELLIGENT_TIERING", "GLACIER_IR"});
      auto& d = c.s3();
      d.bucket_arn = bucket.value_or("");
      d.compression =
          delivery::ParseCompression(comp.value_or("NONE")).value_or(delivery::Compression::kNone);
      d.expected_bucket_owner = owner.value_or("");
      d.output_key_template = tmpl.value_or("");
      d.storage_class = klass.value_or("STANDARD");
    }
    if (dlq) ReadDlq(p, "s3DestinationConfiguration.deadLetterQueueS3Configuration", *dlq, &c.dlq);
  }
  if (tables) {
    aws::Params tp(*tables);
    const json* dlq = tp.Struct("DeadLetterQueueS3Configuration");
    const json* list = tp.List("S3TablesConfigurationList");
    auto freshness = tp.Int("DataFreshnessInSeconds");
    if (auto e = tp.Error()) return call.Fail(*e);
    p.Required("s3TablesDestinationConfiguration.deadLetterQueueS3Configuration", dlq != nullptr);
    p.Required("s3TablesDestinationConfiguration.s3TablesConfigurationList", list != nullptr);
    CheckFreshness(ctx, p, "s3TablesDestinationConfiguration.dataFreshnessInSeconds", freshness);
    if (freshness) c.data_freshness_seconds = static_cast<int>(*freshness);
    if (dlq)
      ReadDlq(p, "s3TablesDestinationConfiguration.deadLetterQueueS3Configuration", *dlq, &c.dlq);
    if (!s3) c.destination = delivery::TableDestinationConfig{};
    if (list) {
      p.ListLength("s3TablesDestinationConfiguration.s3TablesConfigurationList", list->size(),
                   list->dump(), 1, 10000);
      for (size_t i = 0; i < list->size(); ++i) {
        if (!(*list)[i].is_object())
          return call.Fail(aws::SerializationError("Start of list found where not expected"));
        aws::Params t((*list)[i]);
        auto tb = t.Str("TableBucketARN");
        auto ns = t.Str("Namespace");
        auto tn = t.Str("TableName");
        auto comp = t.Str("CompressionType");
        const json* spec = t.Struct("PartitionSpec");
        if (auto e = t.Error()) return call.Fail(*e);
        std::string b = fmt::format(
            "s3TablesDestinationConfiguration.s3TablesConfigurationList.{}.member.", i + 1);
        delivery::TableDestinationConfig table;
        if (spec) {
          aws::Params sp(*spec);
          const json* fields = sp.List("PartitionFields");
          if (auto e = sp.Error()) return call.Fail(*e);
          if (fields) {
            p.ListLength(b + "partitionSpec.partitionFields", fields->size(), fields->dump(), 1,
                         10);
            for (size_t f = 0; f < fields->size(); ++f) {
              if (!(*fields)[f].is_object()) {
                return call.Fail(aws::SerializationError("Start of list found where not expected"));
              }
              aws::Params fp((*fields)[f]);
              auto source = fp.Str("SourceName");
              auto transform = fp.Str("Transform");
              if (auto e = fp.Error()) return call.Fail(*e);
              std::string fb = fmt::format("{}partitionSpec.partitionFields.{}.member.", b, f + 1);
              StrMember(p, fb + "sourceName", source, true, 1, 255, &kSourceName);
              p.Required(fb + "transform", transform.has_value());
              if (transform) p.Enum(fb + "transform", *transform, {"TIME_HOUR"});
              table.partition_fields.push_back({source.value_or(""), transform.value_or("")});
            }
          }
        }
        StrMember(p, b + "tableBucketARN", tb, true, 1, 2048, &kTableBucketArn);
        StrMember(p, b + "namespace", ns, true, 1, 255, &kLowerName);
        StrMember(p, b + "tableName", tn, true, 1, 255, &kLowerName);
        p.Required(b + "compressionType", comp.has_value());
        if (comp) p.Enum(b + "compressionType", *comp, {"NONE", "ZSTD", "SNAPPY"});
        table.table_bucket_arn = tb.value_or("");
        table.ns = ns.value_or("");
        table.table_name = tn.value_or("");
        table.compression = delivery::ParseTableCompression(comp.value_or("ZSTD"))
                                .value_or(delivery::TableCompression::kZstd);
        if (i == 0 && !s3) c.destination = std::move(table);
      }
    }
  }
  if (enc) {
    aws::Params ep(*enc);
    auto type = ep.Str("EncryptionType");
    auto key = ep.Str("KeyId");
    if (auto e = ep.Error()) return call.Fail(*e);
    p.Required("encryptionConfiguration.encryptionType", type.has_value());
    if (type) p.Enum("encryptionConfiguration.encryptionType", *type, {"KMS"});
    StrMember(p, "encryptionConfiguration.keyId", key, true, 1, 2048);
    if (type && key) c.encryption = delivery::EncryptionConfig{*type, *key};
  }
  auto log_cfg = ReadLogging(p, logging);
  if (tags) CheckTagMap(p, "tags", *tags, 200);
  if (!Ok(call, p)) return;

  // Semantic rules (InvalidArgumentException).
  if ((s3 != nullptr) == (tables != nullptr)) {
    return call.Fail(aws::InvalidArgumentError(
        "Exactly one of S3DestinationConfiguration and S3TablesDestinationConfiguration must be "
        "specified."));
  }
  if (streams->size() != 1) {
    return call.Fail(
        aws::InvalidArgumentError("A channel reads exactly one stream: "
                                  "StreamConfigurationList must have one item."));
  }
  if (tables) {
    // The table destination's own rules (kds-delivery-spec.md §1.11, 3, 5 and 6) come first,
    // so a request that AWS refuses gets AWS's reason.
    const json& list = (*tables)["S3TablesConfigurationList"];
    if (list.size() != 1) {
      return call.Fail(aws::InvalidArgumentError(
          "A channel writes exactly one table: S3TablesConfigurationList must have one item."));
    }
    if (c.record_format != delivery::RecordFormat::kJson &&
        c.record_format != delivery::RecordFormat::kGsrJson) {
      return call.Fail(aws::InvalidArgumentError(
          "A streaming-table destination takes RecordFormatType JSON or GSR_JSON."));
    }
    if (c.gsr_schema_arn.empty()) {
      return call.Fail(aws::InvalidArgumentError(
          "A streaming-table destination needs GSRSchemaARN in the RecordConfiguration."));
    }
    // kds-delivery-spec.md §2.6 [DECISION]: exactly one hourly partition field.
    if (c.table().partition_fields.size() != 1) {
      return call.Fail(
          aws::InvalidArgumentError("A streaming-table destination needs a PartitionSpec with "
                                    "exactly one PartitionField: TIME_HOUR on a "
                                    "string column of format date-time."));
    }
    if (!ctx.channels->Supports(delivery::DestinationType::kS3Tables)) {
      return call.Fail(aws::InvalidArgumentError(
          "Streaming-table destinations are not enabled on this server."));
    }
  }
  if (!tables && c.record_format == delivery::RecordFormat::kGsrJson) {
    return call.Fail(aws::InvalidArgumentError(
        "RecordFormatType GSR_JSON is supported for streaming-table destinations only; an S3 "
        "destination takes JSON, STRING or BYTE_ARRAY."));
  }
  if (c.starting_position.type == "AT_TIMESTAMP" && c.starting_position.timestamp_ms <= 0) {
    return call.Fail(aws::InvalidArgumentError("StartingPosition AT_TIMESTAMP needs a Timestamp."));
  }
  if (c.encryption) {
    const std::string& k = c.encryption->key_id;
    if (k == "aws/kinesis" || k == "alias/aws/kinesis" || k.ends_with(":alias/aws/kinesis")) {
      return call.Fail(aws::InvalidArgumentError(
          "The AWS managed key aws/kinesis cannot encrypt channel destinations; use a customer "
          "managed KMS key."));
    }
  }
  aws::Params arn_params(p.object());  // the ARN was checked above; this only extracts the name
  auto stream_name = StreamNameFromArn(ctx, arn_params, "streamARN", *stream_arn);
  if (!stream_name || stream_name->front() == '\x01') {
    return call.Fail(NotFound(
        fmt::format("Stream {} under account {} not found.", *stream_arn, ctx.options.account)));
  }
  bool on_demand = false;
  if (ctx.streams) {
    auto info = ctx.streams->Describe(*stream_name);
    if (!info.ok()) return call.Fail(info.status());
    on_demand = info->mode == stream::StreamMode::kOnDemand;
  } else {
    // Streams that are not this process's (`icestream channels --pg` for a pool reading
    // another endpoint): the source's DescribeStreamSummary.
    auto info = ctx.channels->DescribeSourceStream(*stream_name);
    if (!info.ok()) {
      if (info.status().code() == StatusCode::kNotFound) {
        return call.Fail(NotFound(fmt::format("Stream {} under account {} not found.", *stream_name,
                                              ctx.options.account)));
      }
      return call.Fail(info.status());
    }
    on_demand = info->on_demand;
  }
  if (!on_demand) {
    return call.Fail(aws::ValidationError(fmt::format(
        "Stream {} is in PROVISIONED mode; channels can only be created for ON_DEMAND streams.",
        *stream_name)));
  }
  c.name = *name;
  c.role_arn = *role;
  c.stream_name = *stream_name;
  if (log_cfg) c.logging = *log_cfg;
  if (tags) {
    for (auto it = tags->begin(); it != tags->end(); ++it) {
      c.tags[it.key()] = it.value().is_string() ? it.value().get<std::string>() : "";
    }
  }
  auto created = ctx.channels->Create(std::move(c));
  if (!created.ok()) return call.Fail(created.status());
  call.Reply({{"ChannelDescription", DescriptionJson(*created)}});
}

void DescribeChannel(Context& ctx, Call& call, aws::Params& p) {
  if (Unavailable(ctx, call)) return;
  auto arn = ChannelArnMember(p);
  if (!Ok(call, p)) return;
  auto c = ctx.channels->Describe(*arn);
  if (!c.ok()) return call.Fail(c.status());
  json d = DescriptionJson(*c);
  // icestream extension (docs/channels.md): delivery progress per shard, DLQ count,
  // the destination's own figures, the last error.
  if (auto status = ctx.channels->DeliveryStatus(*arn); status.ok()) d["IcestreamStatus"] = *status;
  call.Reply({{"ChannelDescription", d}});
}

void ListChannels(Context& ctx, Call& call, aws::Params& p) {
  if (Unavailable(ctx, call)) return;
  auto max = p.Int("MaxResults");
  auto token = p.Str("NextToken");
  const json* filters = p.List("StreamFilter");
  if (!Ok(call, p)) return;
  if (max) p.Range("maxResults", *max, 1, 10000);
  if (token) p.Length("nextToken", *token, 1, 1048576);
  std::vector<std::pair<std::string, std::optional<int64_t>>> wanted;
  if (filters) {
    p.ListLength("streamFilter", filters->size(), filters->dump(), 1, 10000);
    for (size_t i = 0; i < filters->size(); ++i) {
      if (!(*filters)[i].is_object())
        return call.Fail(aws::SerializationError("Start of list found where not expected"));
      aws::Params fp((*filters)[i]);
      auto arn = fp.Str("StreamARN");
      auto ts = fp.TimestampMs("StreamCreationTimestamp");
      if (auto e = fp.Error()) return call.Fail(*e);
      StrMember(p, fmt::format("streamFilter.{}.member.streamARN", i + 1), arn, true, 1, 2048,
                &StreamArnPattern());
      if (arn) wanted.emplace_back(*arn, ts);
    }
  }
  if (!Ok(call, p)) return;
  std::string after;
  if (token) {
    auto t = ctx.tokens.DecodeNextToken(*token);
    if (!t || !t->payload.contains("after_channel")) {
      return call.Fail(aws::InvalidArgumentError("Invalid NextToken."));
    }
    if (ctx.clock->NowMillis() - t->issued_ms > ctx.options.next_token_ttl_ms) {
      return call.Fail(
          aws::ApiError{"ExpiredNextTokenException", "The NextToken has expired.", 400});
    }
    after = t->payload["after_channel"].get<std::string>();
  }
  size_t limit = static_cast<size_t>(std::min<int64_t>(max.value_or(100), 100));
  json summaries = json::array();
  bool more = false;
  for (const auto& c : ctx.channels->List()) {
    if (!after.empty() && c.name <= after) continue;
    if (!wanted.empty()) {
      bool keep = false;
      for (const auto& [arn, ts] : wanted) {
        if (arn == c.stream_arn && (!ts || *ts / 1000 == c.stream_created_ms / 1000)) keep = true;
      }
      if (!keep) continue;
    }
    if (summaries.size() == limit) {
      more = true;
      break;
    }
    json s = {{"ChannelARN", c.arn},
              {"ChannelCreationTimestamp", EpochSeconds(c.created_ms)},
              {"ChannelDestinationType", delivery::DestinationTypeName(c.destination_type())},
              {"ChannelId", c.id},
              {"ChannelName", c.name},
              {"ChannelStatus", delivery::ChannelStatusName(c.status)},
              {"Streams",
               json::array({{{"StreamARN", c.stream_arn},
                             {"StreamCreationTimestamp", EpochSeconds(c.stream_created_ms)}}})}};
    if (!c.status_reason.empty()) s["ChannelStatusReason"] = c.status_reason;
    summaries.push_back(std::move(s));
  }
  json out = {{"ChannelSummaries", summaries}};
  if (more) {
    out["NextToken"] = ctx.tokens.EncodeNextToken(
        {{"after_channel", summaries.back()["ChannelName"].get<std::string>()}},
        ctx.clock->NowMillis());
  }
  call.Reply(out);
}

void UpdateChannel(Context& ctx, Call& call, aws::Params& p) {
  if (Unavailable(ctx, call)) return;
  auto arn = ChannelArnMember(p);
  const json* logging = p.Struct("LoggingConfiguration");
  const json* s3 = p.Struct("S3DestinationConfiguration");
  const json* tables = p.Struct("S3TablesDestinationConfiguration");
  if (!Ok(call, p)) return;
  std::optional<int64_t> s3_fresh, tables_fresh;
  if (s3) {
    aws::Params sp(*s3);
    s3_fresh = sp.Int("DataFreshnessInSeconds");
    if (auto e = sp.Error()) return call.Fail(*e);
    p.Required("s3DestinationConfiguration.dataFreshnessInSeconds", s3_fresh.has_value());
    CheckFreshness(ctx, p, "s3DestinationConfiguration.dataFreshnessInSeconds", s3_fresh);
  }
  if (tables) {
    aws::Params tp(*tables);
    tables_fresh = tp.Int("DataFreshnessInSeconds");
    if (auto e = tp.Error()) return call.Fail(*e);
    p.Required("s3TablesDestinationConfiguration.dataFreshnessInSeconds", tables_fresh.has_value());
    CheckFreshness(ctx, p, "s3TablesDestinationConfiguration.dataFreshnessInSeconds", tables_fresh);
  }
  auto log_cfg = ReadLogging(p, logging);
  if (!Ok(call, p)) return;
  if (!logging && !s3 && !tables) {
    return call.Fail(aws::InvalidArgumentError(
        "Nothing to update: give LoggingConfiguration and/or the destination's "
        "DataFreshnessInSeconds."));
  }
  auto current = ctx.channels->Describe(*arn);
  if (!current.ok()) return call.Fail(current.status());
  const bool is_s3 = current->destination_type() == delivery::DestinationType::kS3;
  if ((tables && is_s3) || (s3 && !is_s3)) {
    return call.Fail(aws::InvalidArgumentError(
        "The update names a destination type the channel does not deliver to."));
  }
  std::optional<int> fresh;
  if (s3_fresh) fresh = static_cast<int>(*s3_fresh);
  if (tables_fresh) fresh = static_cast<int>(*tables_fresh);
  auto updated = ctx.channels->Update(*arn, fresh, log_cfg);
  if (!updated.ok()) return call.Fail(updated.status());
  call.Reply({{"ChannelDescription", DescriptionJson(*updated)}});
}

void DeleteChannel(Context& ctx, Call& call, aws::Params& p) {
  if (Unavailable(ctx, call)) return;
  auto arn = ChannelArnMember(p);
  if (!Ok(call, p)) return;
  Status st = ctx.channels->Delete(*arn);
  if (!st.ok()) return call.Fail(st);
  call.ReplyEmpty();
}

// icestream extension: a FAILED channel delivers again from its checkpoints.
void ResumeChannel(Context& ctx, Call& call, aws::Params& p) {
  if (Unavailable(ctx, call)) return;
  auto arn = ChannelArnMember(p);
  if (!Ok(call, p)) return;
  auto c = ctx.channels->Resume(*arn);
  if (!c.ok()) return call.Fail(c.status());
  call.Reply({{"ChannelDescription", DescriptionJson(*c)}});
}

// icestream extension: re-deliver the channel's DLQ lines (docs/channels.md "Redrive").
void StartChannelRedrive(Context& ctx, Call& call, aws::Params& p) {
  if (Unavailable(ctx, call)) return;
  auto arn = ChannelArnMember(p);
  const json* codes = p.List("ErrorCodes");
  auto start = p.TimestampMs("StartTimestamp");
  auto end = p.TimestampMs("EndTimestamp");
  if (!Ok(call, p)) return;
  delivery::RedriveFilter filter;
  if (codes) {
    p.ListLength("errorCodes", codes->size(), codes->dump(), 1, 50);
    for (size_t i = 0; i < codes->size(); ++i) {
      const json& c = (*codes)[i];
      if (!c.is_string()) {
        return call.Fail(aws::SerializationError("Unexpected list element type for ErrorCodes"));
      }
      std::string code = c.get<std::string>();
      StrMember(p, fmt::format("errorCodes.{}.member", i + 1), code, true, 1, 64, &kErrorCode);
      filter.error_codes.insert(code);
    }
  }
  if (!Ok(call, p)) return;
  if (start && end && *start >= *end) {
    return call.Fail(aws::InvalidArgumentError("StartTimestamp must be before EndTimestamp."));
  }
  filter.start_ms = start;
  filter.end_ms = end;
  auto c = ctx.channels->Describe(*arn);
  if (!c.ok()) return call.Fail(c.status());
  auto r = ctx.channels->StartRedrive(*arn, std::move(filter));
  if (!r.ok()) return call.Fail(r.status());
  call.Reply({{"Redrive", delivery::RedriveDescription(*r, *c)}});
}

// icestream extension: a redrive's progress (the latest when RedriveId is omitted).
void DescribeChannelRedrive(Context& ctx, Call& call, aws::Params& p) {
  if (Unavailable(ctx, call)) return;
  auto arn = ChannelArnMember(p);
  auto id = p.Str("RedriveId");
  if (!Ok(call, p)) return;
  StrMember(p, "redriveId", id, false, 1, 64, nullptr);
  if (!Ok(call, p)) return;
  auto c = ctx.channels->Describe(*arn);
  if (!c.ok()) return call.Fail(c.status());
  auto all = ctx.channels->Redrives(*arn);
  if (!all.ok()) return call.Fail(all.status());
  const delivery::RedriveState* found = nullptr;
  for (const auto& r : *all) {
    if (!id || r.id == *id) found = &r;
  }
  if (found == nullptr) {
    return call.Fail(NotFound(id ? fmt::format("Redrive {} of channel {} not found.", *id, *arn)
                                 : fmt::format("Channel {} has no redrive.", *arn)));
  }
  json ids = json::array();
  for (const auto& r : *all) ids.push_back(r.id);
  call.Reply({{"Redrive", delivery::RedriveDescription(*found, *c)}, {"RedriveIds", ids}});
}

}  // namespace icestream::kinesis
