// Glue Schema Registry operations (aws-api.md §D.3, semantics §D.4), named after the
// operation. Each reads and checks its members, calls the SchemaRegistry and answers.
#include <fmt/format.h>

#include "registry/glue/context.h"

namespace icestream::registry::glue {

using nlohmann::json;

namespace {

bool Failed(Call& call, aws::Params& p) {
  if (auto e = p.Error()) {
    call.Fail(*e);
    return true;
  }
  return false;
}

bool Failed(Call& call, const Check& c) {
  if (c) {
    call.Fail(*c);
    return true;
  }
  return false;
}

Check Missing(std::string_view member) {
  return InvalidInput(fmt::format("{} is required.", member));
}

json RegistryJson(const RegistryInfo& r) {
  json j = {{"RegistryName", r.name},
            {"RegistryArn", r.arn},
            {"Status", "AVAILABLE"},
            {"CreatedTime", Time(r.created_ms)},
            {"UpdatedTime", Time(r.updated_ms)}};
  if (!r.description.empty()) j["Description"] = r.description;
  return j;
}

json SchemaJson(const SchemaInfo& s) {
  json j = {{"RegistryName", s.registry},
            {"RegistryArn", s.registry_arn},
            {"SchemaName", s.name},
            {"SchemaArn", s.arn},
            {"DataFormat", std::string(DataFormatName(s.data_format))},
            {"Compatibility", std::string(CompatibilityName(s.compatibility))},
            {"SchemaCheckpoint", s.checkpoint},
            {"LatestSchemaVersion", s.latest_version},
            {"NextSchemaVersion", s.next_version},
            {"SchemaStatus", "AVAILABLE"},
            {"CreatedTime", Time(s.created_ms)},
            {"UpdatedTime", Time(s.updated_ms)}};
  if (!s.description.empty()) j["Description"] = s.description;
  return j;
}

// The SchemaId member, required.
Check SchemaIdOf(GlueApi::Context& ctx, aws::Params& p, std::string* registry,
                 std::string* schema) {
  const json* id = p.Struct("SchemaId");
  if (auto e = p.Error()) return e;
  if (id == nullptr) return Missing("SchemaId");
  return ResolveSchemaId(ctx, *id, registry, schema);
}

// SchemaId and SchemaDefinition, both required.
Check SchemaAndDefinition(GlueApi::Context& ctx, aws::Params& p, std::string* registry,
                          std::string* schema, std::string* definition) {
  if (auto e = SchemaIdOf(ctx, p, registry, schema)) return e;
  auto d = p.Str("SchemaDefinition");
  if (auto e = p.Error()) return e;
  if (!d) return Missing("SchemaDefinition");
  if (auto e = CheckDefinitionText(*d)) return e;
  *definition = std::move(*d);
  return std::nullopt;
}

Check RegistryIdOf(GlueApi::Context& ctx, aws::Params& p, std::string* registry) {
  const json* id = p.Struct("RegistryId");
  if (auto e = p.Error()) return e;
  if (id == nullptr) return Missing("RegistryId");
  return ResolveRegistryId(ctx, *id, registry);
}

template <typename T, typename F>
void ReplyPage(Call& call, const std::vector<T>& all, size_t offset, size_t limit, const char* key,
               F to_json) {
  json items = json::array();
  for (size_t i = offset; i < all.size() && i < offset + limit; ++i)
    items.push_back(to_json(all[i]));
  json out = {{key, items}};
  if (offset + limit < all.size()) out["NextToken"] = NextToken(offset + limit);
  call.Reply(out);
}

}  // namespace

// ---------------------------------------------------------------- registries

void CreateRegistry(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  auto name = p.Str("RegistryName");
  auto description = p.Str("Description");
  const json* tags = p.Map("Tags");
  if (Failed(call, p)) return;
  if (!name) return call.Fail(*Missing("RegistryName"));
  if (Failed(call, CheckName(*name, "registryName"))) return;
  if (description && Failed(call, CheckDescription(*description))) return;
  Tags t;
  if (tags && Failed(call, CheckTags(*tags, &t))) return;
  auto r = ctx.registry->CreateRegistry(*name, description.value_or(""), t);
  if (!r.ok()) return call.Fail(r.status());
  json out = {{"RegistryArn", r->arn}, {"RegistryName", r->name}, {"Tags", r->tags}};
  if (!r->description.empty()) out["Description"] = r->description;
  call.Reply(out);
}

void GetRegistry(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  std::string name;
  if (Failed(call, RegistryIdOf(ctx, p, &name))) return;
  auto r = ctx.registry->GetRegistry(name);
  if (!r.ok()) return call.Fail(r.status());
  call.Reply(RegistryJson(*r));
}

void ListRegistries(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  size_t offset = 0, limit = 0;
  if (Failed(call, PageBounds(p, &offset, &limit))) return;
  auto all = ctx.registry->ListRegistries();
  if (!all.ok()) return call.Fail(all.status());
  ReplyPage(call, *all, offset, limit, "Registries", RegistryJson);
}

void UpdateRegistry(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  std::string name;
  if (Failed(call, RegistryIdOf(ctx, p, &name))) return;
  auto description = p.Str("Description");
  if (Failed(call, p)) return;
  if (!description) return call.Fail(*Missing("Description"));
  if (Failed(call, CheckDescription(*description))) return;
  auto r = ctx.registry->UpdateRegistry(name, *description);
  if (!r.ok()) return call.Fail(r.status());
  call.Reply({{"RegistryName", r->name}, {"RegistryArn", r->arn}});
}

void DeleteRegistry(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  std::string name;
  if (Failed(call, RegistryIdOf(ctx, p, &name))) return;
  auto r = ctx.registry->DeleteRegistry(name);
  if (!r.ok()) return call.Fail(r.status());
  call.Reply({{"RegistryName", r->name}, {"RegistryArn", r->arn}, {"Status", "DELETING"}});
}

// ---------------------------------------------------------------- schemas

void CreateSchema(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  const json* registry_id = p.Struct("RegistryId");
  auto name = p.Str("SchemaName");
  auto format = p.Str("DataFormat");
  auto compat = p.Str("Compatibility");
  auto description = p.Str("Description");
  auto definition = p.Str("SchemaDefinition");
  const json* tags = p.Map("Tags");
  if (Failed(call, p)) return;
  std::string registry = kDefaultRegistry;
  if (registry_id && Failed(call, ResolveRegistryId(ctx, *registry_id, &registry))) return;
  if (!name) return call.Fail(*Missing("SchemaName"));
  if (Failed(call, CheckName(*name, "schemaName"))) return;
  if (!format) return call.Fail(*Missing("DataFormat"));
  DataFormat df;
  if (!ParseDataFormat(*format, &df)) {
    return call.Fail(
        InvalidInput("Data format is not supported: " + *format + ". Use AVRO, JSON or PROTOBUF."));
  }
  Compatibility c = Compatibility::kBackward;
  if (compat && !ParseCompatibility(*compat, &c)) {
    return call.Fail(InvalidInput("Compatibility is not valid: " + *compat));
  }
  if (description && Failed(call, CheckDescription(*description))) return;
  if (definition && Failed(call, CheckDefinitionText(*definition))) return;
  Tags t;
  if (tags && Failed(call, CheckTags(*tags, &t))) return;
  auto r = ctx.registry->CreateSchema(registry, registry_id != nullptr, *name, df, c,
                                      description.value_or(""), t, definition);
  if (!r.ok()) return call.Fail(r.status());
  const SchemaInfo& s = r->schema;
  json out = SchemaJson(s);
  out.erase("CreatedTime");
  out.erase("UpdatedTime");
  out["Tags"] = s.tags;
  if (r->version) {
    out["SchemaVersionId"] = r->version->id;
    out["SchemaVersionStatus"] = std::string(VersionStatusName(r->version->status));
  }
  call.Reply(out);
}

void GetSchema(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  std::string registry, schema;
  if (Failed(call, SchemaIdOf(ctx, p, &registry, &schema))) return;
  auto s = ctx.registry->GetSchema(registry, schema);
  if (!s.ok()) return call.Fail(s.status());
  call.Reply(SchemaJson(*s));
}

void ListSchemas(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  const json* registry_id = p.Struct("RegistryId");
  if (Failed(call, p)) return;
  std::optional<std::string> registry;
  if (registry_id) {
    std::string r;
    if (Failed(call, ResolveRegistryId(ctx, *registry_id, &r))) return;
    registry = r;
  }
  size_t offset = 0, limit = 0;
  if (Failed(call, PageBounds(p, &offset, &limit))) return;
  auto all = ctx.registry->ListSchemas(registry);
  if (!all.ok()) return call.Fail(all.status());
  ReplyPage(call, *all, offset, limit, "Schemas", [](const SchemaInfo& s) {
    json j = {{"RegistryName", s.registry},
              {"SchemaName", s.name},
              {"SchemaArn", s.arn},
              {"SchemaStatus", "AVAILABLE"},
              {"CreatedTime", Time(s.created_ms)},
              {"UpdatedTime", Time(s.updated_ms)}};
    if (!s.description.empty()) j["Description"] = s.description;
    return j;
  });
}

void UpdateSchema(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  std::string registry, schema;
  if (Failed(call, SchemaIdOf(ctx, p, &registry, &schema))) return;
  const json* svn = p.Struct("SchemaVersionNumber");
  auto compat = p.Str("Compatibility");
  auto description = p.Str("Description");
  if (Failed(call, p)) return;
  std::optional<VersionSelector> checkpoint;
  if (svn) {
    VersionSelector v;
    if (Failed(call, ResolveVersionNumber(*svn, &v))) return;
    checkpoint = v;
  }
  std::optional<Compatibility> c;
  if (compat) {
    Compatibility parsed;
    if (!ParseCompatibility(*compat, &parsed))
      return call.Fail(InvalidInput("Compatibility is not valid: " + *compat));
    c = parsed;
  }
  if (c && !checkpoint) {
    return call.Fail(
        InvalidInput("SchemaVersionNumber is required when Compatibility is updated."));
  }
  if (!c && !checkpoint && !description) {
    return call.Fail(InvalidInput(
        "At least one of Compatibility, SchemaVersionNumber or Description has to be provided."));
  }
  if (description && Failed(call, CheckDescription(*description))) return;
  auto s = ctx.registry->UpdateSchema(registry, schema, checkpoint, c, description);
  if (!s.ok()) return call.Fail(s.status());
  call.Reply({{"SchemaArn", s->arn}, {"SchemaName", s->name}, {"RegistryName", s->registry}});
}

void DeleteSchema(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  std::string registry, schema;
  if (Failed(call, SchemaIdOf(ctx, p, &registry, &schema))) return;
  auto s = ctx.registry->DeleteSchema(registry, schema);
  if (!s.ok()) return call.Fail(s.status());
  call.Reply({{"SchemaArn", s->arn}, {"SchemaName", s->name}, {"Status", "DELETING"}});
}

// ---------------------------------------------------------------- versions

void RegisterSchemaVersion(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  std::string registry, schema, definition;
  if (Failed(call, SchemaAndDefinition(ctx, p, &registry, &schema, &definition))) return;
  auto v = ctx.registry->RegisterVersion(registry, schema, definition);
  if (!v.ok()) return call.Fail(v.status());
  call.Reply({{"SchemaVersionId", v->id},
              {"VersionNumber", v->number},
              {"Status", std::string(VersionStatusName(v->status))}});
}

void GetSchemaVersion(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  const json* id = p.Struct("SchemaId");
  auto version_id = p.Str("SchemaVersionId");
  const json* svn = p.Struct("SchemaVersionNumber");
  if (Failed(call, p)) return;
  Result<VersionInfo> v = NotFound("");
  if (version_id) {
    if (id || svn)
      return call.Fail(InvalidInput(
          "No other input parameters can be specified when fetching by SchemaVersionId."));
    if (version_id->size() != 36) {
      return call.Fail(InvalidInput(
          "The parameter value contains one or more characters that are not valid. Parameter "
          "Name: schemaVersionId"));
    }
    v = ctx.registry->GetVersionById(*version_id);
  } else {
    if (!id || !svn) {
      return call.Fail(InvalidInput(
          "SchemaVersionId, or SchemaId with SchemaVersionNumber, has to be provided."));
    }
    std::string registry, schema;
    if (Failed(call, ResolveSchemaId(ctx, *id, &registry, &schema))) return;
    VersionSelector sel;
    if (Failed(call, ResolveVersionNumber(*svn, &sel))) return;
    v = ctx.registry->GetVersion(registry, schema, sel);
  }
  if (!v.ok()) return call.Fail(v.status());
  call.Reply({{"SchemaVersionId", v->id},
              {"SchemaDefinition", v->definition},
              {"DataFormat", std::string(DataFormatName(v->data_format))},
              {"SchemaArn", v->schema_arn},
              {"VersionNumber", v->number},
              {"Status", std::string(VersionStatusName(v->status))},
              {"CreatedTime", Time(v->created_ms)}});
}

void ListSchemaVersions(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  std::string registry, schema;
  if (Failed(call, SchemaIdOf(ctx, p, &registry, &schema))) return;
  size_t offset = 0, limit = 0;
  if (Failed(call, PageBounds(p, &offset, &limit))) return;
  auto all = ctx.registry->ListVersions(registry, schema);
  if (!all.ok()) return call.Fail(all.status());
  ReplyPage(call, *all, offset, limit, "Schemas", [](const VersionInfo& v) {
    return json{{"SchemaArn", v.schema_arn},
                {"SchemaVersionId", v.id},
                {"VersionNumber", v.number},
                {"Status", std::string(VersionStatusName(v.status))},
                {"CreatedTime", Time(v.created_ms)}};
  });
}

void GetSchemaByDefinition(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  std::string registry, schema, definition;
  if (Failed(call, SchemaAndDefinition(ctx, p, &registry, &schema, &definition))) return;
  auto v = ctx.registry->GetVersionByDefinition(registry, schema, definition);
  if (!v.ok()) return call.Fail(v.status());
  call.Reply({{"SchemaVersionId", v->id},
              {"SchemaArn", v->schema_arn},
              {"DataFormat", std::string(DataFormatName(v->data_format))},
              {"Status", std::string(VersionStatusName(v->status))},
              {"CreatedTime", Time(v->created_ms)}});
}

void DeleteSchemaVersions(GlueApi::Context& ctx, Call& call, aws::Params& p) {
  std::string registry, schema;
  if (Failed(call, SchemaIdOf(ctx, p, &registry, &schema))) return;
  auto versions = p.Str("Versions");
  if (Failed(call, p)) return;
  if (!versions) return call.Fail(*Missing("Versions"));
  // "N" or "A-B" ([1-9][0-9]*|[1-9][0-9]*-[1-9][0-9]*), at most 25 versions.
  auto number = [](const std::string& s, int64_t* out) {
    if (s.empty() || s.size() > 6 || s[0] == '0') return false;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
    }
    *out = std::stoll(s);
    return true;
  };
  int64_t first = 0, last = 0;
  size_t dash = versions->find('-');
  bool ok = dash == std::string::npos ? number(*versions, &first)
                                      : number(versions->substr(0, dash), &first) &&
                                            number(versions->substr(dash + 1), &last);
  if (dash == std::string::npos) last = first;
  if (!ok || last < first) {
    return call.Fail(InvalidInput(
        "The parameter value contains one or more characters that are not valid. Parameter "
        "Name: versions"));
  }
  if (last - first + 1 > 25)
    return call.Fail(InvalidInput("At most 25 schema versions can be deleted at once."));
  auto errors = ctx.registry->DeleteVersions(registry, schema, first, last);
  if (!errors.ok()) return call.Fail(errors.status());
  json items = json::array();
  for (const auto& e : *errors) {
    items.push_back({{"VersionNumber", e.number},
                     {"ErrorDetails", {{"ErrorCode", e.code}, {"ErrorMessage", e.message}}}});
  }
  call.Reply({{"SchemaVersionErrors", items}});
}

void CheckSchemaVersionValidity(GlueApi::Context&, Call& call, aws::Params& p) {
  auto format = p.Str("DataFormat");
  auto definition = p.Str("SchemaDefinition");
  if (Failed(call, p)) return;
  if (!format) return call.Fail(*Missing("DataFormat"));
  if (!definition) return call.Fail(*Missing("SchemaDefinition"));
  DataFormat df;
  if (!ParseDataFormat(*format, &df))
    return call.Fail(InvalidInput("Data format is not supported: " + *format));
  if (Failed(call, CheckDefinitionText(*definition))) return;
  Status st = CheckDefinition(df, *definition);
  if (st.ok()) return call.Reply({{"Valid", true}});
  std::string msg = st.message();
  if (msg.size() > 5000) msg.resize(5000);
  call.Reply({{"Valid", false}, {"Error", msg}});
}

}  // namespace icestream::registry::glue
