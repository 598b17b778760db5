// Glue Schema Registry front end: dispatch and the shared member checks
// (aws-api.md §D.1-§D.3, texts of §D.5).
#include "registry/glue/api.h"

#include <fmt/format.h>

#include <charconv>
#include <unordered_map>

#include "aws/json_request.h"
#include "common/base64.h"
#include "common/crypto.h"
#include "common/time_format.h"
#include "registry/glue/context.h"

namespace icestream::registry::glue {

using nlohmann::json;

void Call::Reply(const json& body) const { respond(aws::JsonResponse(body.dump(), request_id)); }
void Call::Fail(const aws::ApiError& e) const {
  respond(aws::ErrorResponse(e, request_id, aws::ErrorFlavor::kGlue));
}
void Call::Fail(const Status& st) const { Fail(aws::GlueError(st)); }

aws::ApiError InvalidInput(std::string message) {
  return {"InvalidInputException", std::move(message), 400};
}

std::string Time(int64_t ms) { return FormatIso8601Ms(ms); }

Check CheckName(const std::string& v, std::string_view parameter) {
  size_t len = aws::Utf8Length(v);
  if (len < 1 || len > 255) {
    return InvalidInput(
        fmt::format("The resource name contains too many or too few characters. Parameter Name: {}",
                    parameter));
  }
  for (char c : v) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '$' ||
              c == '#' || c == '.';
    if (!ok) {
      return InvalidInput(
          fmt::format("The parameter value contains one or more characters that are not valid. "
                      "Parameter Name: {}",
                      parameter));
    }
  }
  return std::nullopt;
}

Check CheckDescription(const std::string& v) {
  if (aws::Utf8Length(v) > 2048) {
    return InvalidInput(
        "The description contains too many characters (at most 2048). Parameter Name: description");
  }
  for (unsigned char c : v) {
    if (c < 0x20 && c != '\r' && c != '\n' && c != '\t') {
      return InvalidInput(
          "The parameter value contains one or more characters that are not valid. Parameter Name: "
          "description");
    }
  }
  return std::nullopt;
}

Check CheckDefinitionText(const std::string& v) {
  size_t len = aws::Utf8Length(v);
  bool blank = v.find_first_not_of(" \t\r\n") == std::string::npos;
  if (len < 1 || len > 170000 || blank) {
    return InvalidInput(
        "The schema definition must contain 1 to 170000 characters, not all white space. Parameter "
        "Name: "
        "schemaDefinition");
  }
  return std::nullopt;
}

Check CheckTags(const json& tags, Tags* out) {
  if (!tags.is_object()) return aws::SerializationError("Expected map or null");
  if (tags.size() > 50) return InvalidInput("New Tags cannot be empty or more than 50");
  for (auto it = tags.begin(); it != tags.end(); ++it) {
    if (!it.value().is_string()) return aws::SerializationError("Tag values must be strings");
    size_t kl = aws::Utf8Length(it.key()), vl = aws::Utf8Length(it.value().get<std::string>());
    if (kl < 1 || kl > 128 || vl > 256) {
      return InvalidInput("Tag keys must have 1 to 128 characters and values at most 256");
    }
    (*out)[it.key()] = it.value().get<std::string>();
  }
  return std::nullopt;
}

namespace {

std::optional<std::string> MemberString(const json& obj, const char* key, Check* err) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) {
    *err = aws::SerializationError(fmt::format("{} must be a string", key));
    return std::nullopt;
  }
  return it->get<std::string>();
}

}  // namespace

Check ResolveRegistryId(const GlueApi::Context& ctx, const json& id, std::string* name) {
  if (!id.is_object()) return aws::SerializationError("Start of list found where not expected");
  Check err;
  auto n = MemberString(id, "RegistryName", &err);
  auto arn = MemberString(id, "RegistryArn", &err);
  if (err) return err;
  if (n.has_value() == arn.has_value()) {
    return InvalidInput(
        "One of registryName or registryArn has to be provided, both cannot be provided.");
  }
  if (n) {
    if (auto e = CheckName(*n, "registryName")) return e;
    *name = *n;
    return std::nullopt;
  }
  auto parts = ParseRegistryArn(*arn);
  if (!parts || arn->size() > 10240) {
    return InvalidInput(
        "The parameter value contains one or more characters that are not valid. Parameter Name: "
        "registryArn");
  }
  const std::string& reg = parts->registry;
  if (auto e = CheckName(reg, "registryArn")) return e;
  if (parts->region != ctx.options.region || parts->account != ctx.options.account) {
    return aws::ApiError{"EntityNotFoundException", "Registry is not found. RegistryArn: " + *arn,
                         400};
  }
  *name = reg;
  return std::nullopt;
}

Check ResolveSchemaId(const GlueApi::Context& ctx, const json& id, std::string* registry,
                      std::string* schema) {
  if (!id.is_object()) return aws::SerializationError("Start of list found where not expected");
  Check err;
  auto arn = MemberString(id, "SchemaArn", &err);
  auto name = MemberString(id, "SchemaName", &err);
  auto reg = MemberString(id, "RegistryName", &err);
  if (err) return err;
  if (arn && (name || reg)) {
    return InvalidInput(
        "One of (registryName and schemaName) or schemaArn has to be provided, both cannot be "
        "provided.");
  }
  if (!arn && !name) {
    return InvalidInput(
        "At least one of (registryName and schemaName) or schemaArn has to be provided.");
  }
  if (name) {
    if (auto e = CheckName(*name, "schemaName")) return e;
    if (reg) {
      if (auto e = CheckName(*reg, "registryName")) return e;
    }
    *registry = reg.value_or(kDefaultRegistry);
    *schema = *name;
    return std::nullopt;
  }
  auto parts = ParseSchemaArn(*arn);
  if (!parts) {
    return InvalidInput(
        "The parameter value contains one or more characters that are not valid. Parameter Name: "
        "schemaArn");
  }
  const std::string &r = parts->registry, &s = parts->schema;
  if (auto e = CheckName(r, "schemaArn")) return e;
  if (auto e = CheckName(s, "schemaArn")) return e;
  if (parts->region != ctx.options.region || parts->account != ctx.options.account) {
    return aws::ApiError{
        "EntityNotFoundException",
        fmt::format("Schema is not found. RegistryName: {}, SchemaName: {}, SchemaArn: {}", r, s,
                    *arn),
        400};
  }
  *registry = r;
  *schema = s;
  return std::nullopt;
}

Check ResolveVersionNumber(const json& svn, VersionSelector* out) {
  if (!svn.is_object()) return aws::SerializationError("Start of list found where not expected");
  auto latest = svn.find("LatestVersion");
  auto number = svn.find("VersionNumber");
  bool has_latest = latest != svn.end() && !latest->is_null();
  bool has_number = number != svn.end() && !number->is_null();
  if (has_latest && !latest->is_boolean())
    return aws::SerializationError("LatestVersion must be a boolean");
  if (has_number && !number->is_number_integer())
    return aws::SerializationError("VersionNumber must be an integer");
  bool is_latest = has_latest && latest->get<bool>();
  if (is_latest == has_number)
    return InvalidInput("Only one of VersionNumber or LatestVersion is required.");
  if (has_number) {
    int64_t n = number->get<int64_t>();
    if (n < 1 || n > 100000) return InvalidInput("VersionNumber must be between 1 and 100000");
    out->number = n;
  }
  out->latest = is_latest;
  return std::nullopt;
}

Check PageBounds(aws::Params& p, size_t* offset, size_t* limit) {
  auto max = p.Int("MaxResults");
  auto token = p.Str("NextToken");
  if (auto e = p.Error()) return e;
  *limit = 25;
  if (max) {
    if (*max < 1 || *max > 100) return InvalidInput("MaxResults must be between 1 and 100");
    *limit = static_cast<size_t>(*max);
  }
  *offset = 0;
  if (token) {
    auto raw = base64::DecodeUrl(*token);
    size_t v = 0;
    bool ok = raw && raw->rfind("o:", 0) == 0;
    if (ok) {
      auto [ptr, ec] = std::from_chars(raw->data() + 2, raw->data() + raw->size(), v);
      ok = ec == std::errc() && ptr == raw->data() + raw->size();
    }
    if (!ok) return InvalidInput("Invalid NextToken");
    *offset = v;
  }
  return std::nullopt;
}

std::string NextToken(size_t next_offset) {
  return base64::EncodeUrl("o:" + std::to_string(next_offset));
}

namespace {

const std::unordered_map<std::string_view, Handler>& Handlers() {
  static const std::unordered_map<std::string_view, Handler> kHandlers = {
      {"CreateRegistry", CreateRegistry},
      {"GetRegistry", GetRegistry},
      {"ListRegistries", ListRegistries},
      {"UpdateRegistry", UpdateRegistry},
      {"DeleteRegistry", DeleteRegistry},
      {"CreateSchema", CreateSchema},
      {"GetSchema", GetSchema},
      {"ListSchemas", ListSchemas},
      {"UpdateSchema", UpdateSchema},
      {"DeleteSchema", DeleteSchema},
      {"RegisterSchemaVersion", RegisterSchemaVersion},
      {"GetSchemaVersion", GetSchemaVersion},
      {"ListSchemaVersions", ListSchemaVersions},
      {"GetSchemaByDefinition", GetSchemaByDefinition},
      {"DeleteSchemaVersions", DeleteSchemaVersions},
      {"CheckSchemaVersionValidity", CheckSchemaVersionValidity},
  };
  return kHandlers;
}

}  // namespace

GlueApi::GlueApi(SchemaRegistry* registry, GlueOptions options)
    : ctx_(std::make_unique<Context>(Context{registry, std::move(options)})) {}
GlueApi::~GlueApi() = default;

bool GlueApi::Knows(std::string_view op) const { return Handlers().count(op) > 0; }

void GlueApi::Handle(std::string_view op, std::shared_ptr<http::Request> req,
                     http::Responder respond) {
  Call call{std::move(req), std::move(respond), crypto::RandomUuid()};
  auto it = Handlers().find(op);
  if (it == Handlers().end()) return call.Fail(aws::UnknownOperationError());
  if (auto e = aws::ServeJsonRequest(op, call.req->body, std::nullopt,
                                     [&](aws::Params& p) { it->second(*ctx_, call, p); })) {
    call.Fail(*e);
  }
}

}  // namespace icestream::registry::glue
