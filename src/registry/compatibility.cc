// Schema compatibility rules (see compatibility.h; Avro specification "Schema
// Resolution").
#include "registry/compatibility.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "format/avro/schema.h"

namespace icestream::registry {

using nlohmann::json;

std::string_view CompatibilityName(Compatibility c) {
  switch (c) {
    case Compatibility::kNone: return "NONE";
    case Compatibility::kDisabled: return "DISABLED";
    case Compatibility::kBackward: return "BACKWARD";
    case Compatibility::kBackwardAll: return "BACKWARD_ALL";
    case Compatibility::kForward: return "FORWARD";
    case Compatibility::kForwardAll: return "FORWARD_ALL";
    case Compatibility::kFull: return "FULL";
    case Compatibility::kFullAll: return "FULL_ALL";
  }
  return "";
}

bool ParseCompatibility(std::string_view s, Compatibility* out) {
  for (auto c : {Compatibility::kNone, Compatibility::kDisabled, Compatibility::kBackward, Compatibility::kBackwardAll,
                 Compatibility::kForward, Compatibility::kForwardAll, Compatibility::kFull, Compatibility::kFullAll}) {
    if (CompatibilityName(c) == s) {
      *out = c;
      return true;
    }
  }
  return false;
}

namespace {

// ---------------------------------------------------------------- JSON Schema
std::set<std::string> TypesOf(const json& s) {
  static const std::set<std::string> kAll = {"null", "boolean", "object", "array", "number", "string", "integer"};
  if (!s.is_object()) return kAll;
  auto t = s.find("type");
  if (t == s.end()) return kAll;
  std::set<std::string> out;
  if (t->is_string()) out.insert(t->get<std::string>());
  if (t->is_array()) {
    for (const auto& x : *t) {
      if (x.is_string()) out.insert(x.get<std::string>());
    }
  }
  return out;
}

std::set<std::string> StringSet(const json& s, const char* key) {
  std::set<std::string> out;
  if (!s.is_object()) return out;
  auto it = s.find(key);
  if (it == s.end() || !it->is_array()) return out;
  for (const auto& x : *it) {
    if (x.is_string()) out.insert(x.get<std::string>());
  }
  return out;
}

const json* Member(const json& s, const char* key) {
  if (!s.is_object()) return nullptr;
  auto it = s.find(key);
  return it == s.end() ? nullptr : &*it;
}

// A numeric bound: the reader's must be no tighter than the writer's.
std::string Bound(const json& r, const json& w, const char* key, bool lower, const std::string& path) {
  const json* rb = Member(r, key);
  if (rb == nullptr || !rb->is_number()) return "";
  const json* wb = Member(w, key);
  if (wb == nullptr || !wb->is_number()) return fmt::format("{}: the reader adds the bound {} {}", path, key, rb->dump());
  double rv = rb->get<double>(), wv = wb->get<double>();
  if (lower ? rv > wv : rv < wv) {
    return fmt::format("{}: {} tightened from {} to {}", path, key, wb->dump(), rb->dump());
  }
  return "";
}

std::string JsonReads(const json& r, const json& w, const std::string& path, int depth) {
  if (depth > 64) return "";
  if (r.is_boolean()) return r.get<bool>() || (w.is_boolean() && !w.get<bool>()) ? "" : path + ": the reader accepts nothing";
  if (w.is_boolean() && !w.get<bool>()) return "";
  if (!r.is_object()) return "";
  // Types: the writer's must all be readable.
  std::set<std::string> rt = TypesOf(r), wt = TypesOf(w);
  for (const auto& t : wt) {
    bool ok = rt.count(t) || (t == "integer" && rt.count("number"));
    if (!ok) return fmt::format("{}: type '{}' written is not accepted by the reader", path, t);
  }
  // Enums may only grow.
  if (const json* re = Member(r, "enum"); re && re->is_array()) {
    const json* we = Member(w, "enum");
    if (we == nullptr || !we->is_array()) return path + ": the reader restricts values to an enum";
    for (const auto& v : *we) {
      if (std::find(re->begin(), re->end(), v) == re->end()) {
        return fmt::format("{}: enum value {} was removed", path, v.dump());
      }
    }
  }
  for (const char* key : {"minimum", "exclusiveMinimum", "minLength", "minItems"}) {
    if (auto e = Bound(r, w, key, true, path); !e.empty()) return e;
  }
  for (const char* key : {"maximum", "exclusiveMaximum", "maxLength", "maxItems"}) {
    if (auto e = Bound(r, w, key, false, path); !e.empty()) return e;
  }
  // Objects: required properties, shared properties, closed content.
  if (rt.count("object") && wt.count("object")) {
    std::set<std::string> rreq = StringSet(r, "required"), wreq = StringSet(w, "required");
    for (const auto& p : rreq) {
      if (!wreq.count(p)) return fmt::format("{}: property '{}' is required by the reader but not by the writer", path, p);
    }
    const json* rp = Member(r, "properties");
    const json* wp = Member(w, "properties");
    const json* radd = Member(r, "additionalProperties");
    if (wp && wp->is_object()) {
      for (auto it = wp->begin(); it != wp->end(); ++it) {
        std::string at = path + "/properties/" + it.key();
        if (rp && rp->is_object() && rp->contains(it.key())) {
          if (auto e = JsonReads((*rp)[it.key()], it.value(), at, depth + 1); !e.empty()) return e;
        } else if (radd && radd->is_boolean() && !radd->get<bool>()) {
          return fmt::format("{}: property '{}' is written but the reader allows no additional properties", path, it.key());
        } else if (radd && radd->is_object()) {
          if (auto e = JsonReads(*radd, it.value(), at, depth + 1); !e.empty()) return e;
        }
      }
    }
    const json* wadd = Member(w, "additionalProperties");
    if (radd && wadd && radd->is_object() && wadd->is_object()) {
      if (auto e = JsonReads(*radd, *wadd, path + "/additionalProperties", depth + 1); !e.empty()) return e;
    }
  }
  // Arrays: items.
  if (rt.count("array") && wt.count("array")) {
    const json* ri = Member(r, "items");
    const json* wi = Member(w, "items");
    if (ri && wi && ri->is_object() && wi->is_object()) {
      if (auto e = JsonReads(*ri, *wi, path + "/items", depth + 1); !e.empty()) return e;
    }
  }
  // Shared definitions.
  for (const char* defs : {"definitions", "$defs"}) {
    const json* rd = Member(r, defs);
    const json* wd = Member(w, defs);
    if (rd && wd && rd->is_object() && wd->is_object()) {
      for (auto it = rd->begin(); it != rd->end(); ++it) {
        if (wd->contains(it.key())) {
          if (auto e = JsonReads(it.value(), (*wd)[it.key()], path + "/" + defs + "/" + it.key(), depth + 1); !e.empty()) {
            return e;
          }
        }
      }
    }
  }
  return "";
}

// ---------------------------------------------------------------- Avro
using format::avro::AvroType;
using format::avro::Node;

std::string ShortName(const std::string& full) {
  size_t dot = full.rfind('.');
  return dot == std::string::npos ? full : full.substr(dot + 1);
}

class AvroResolver {
 public:
  std::string Reads(const Node& r, const Node& w, const std::string& path) {
    if (!visiting_.insert({&r, &w}).second) return "";  // recursive types: assume the cycle holds
    if (w.type == AvroType::kUnion) {
      for (const Node* b : w.branches) {
        if (auto e = Reads(r, *b, path); !e.empty()) return e;
      }
      return "";
    }
    if (r.type == AvroType::kUnion) {
      for (const Node* b : r.branches) {
        if (Reads(*b, w, path).empty()) return "";
      }
      return fmt::format("{}: no branch of the reader's union reads the writer's {}", path, AvroTypeName(w.type));
    }
    auto promotes = [&] {
      switch (w.type) {
        case AvroType::kInt: return r.type == AvroType::kLong || r.type == AvroType::kFloat || r.type == AvroType::kDouble;
        case AvroType::kLong: return r.type == AvroType::kFloat || r.type == AvroType::kDouble;
        case AvroType::kFloat: return r.type == AvroType::kDouble;
        case AvroType::kString: return r.type == AvroType::kBytes;
        case AvroType::kBytes: return r.type == AvroType::kString;
        default: return false;
      }
    };
    if (r.type != w.type) {
      if (promotes()) return "";
      return fmt::format("{}: {} written cannot be read as {}", path, AvroTypeName(w.type), AvroTypeName(r.type));
    }
    switch (r.type) {
      case AvroType::kRecord: {
        if (ShortName(r.name) != ShortName(w.name)) {
          return fmt::format("{}: record {} cannot be read as {}", path, w.name, r.name);
        }
        for (const auto& rf : r.fields) {
          int wi = w.FieldIndex(rf.name);
          if (wi < 0) {
            if (!rf.has_default) return fmt::format("{}.{}: field missing from the writer and without a default", path, rf.name);
            continue;
          }
          if (auto e = Reads(*rf.type, *w.fields[static_cast<size_t>(wi)].type, path + "." + rf.name); !e.empty()) return e;
        }
        return "";
      }
      case AvroType::kEnum: {
        if (ShortName(r.name) != ShortName(w.name)) return fmt::format("{}: enum {} read as {}", path, w.name, r.name);
        for (const auto& s : w.symbols) {
          if (std::find(r.symbols.begin(), r.symbols.end(), s) == r.symbols.end()) {
            return fmt::format("{}: enum symbol {} unknown to the reader", path, s);
          }
        }
        return "";
      }
      case AvroType::kFixed:
        if (ShortName(r.name) != ShortName(w.name) || r.size != w.size) {
          return fmt::format("{}: fixed {}({}) read as {}({})", path, w.name, w.size, r.name, r.size);
        }
        return "";
      case AvroType::kArray: return Reads(*r.items, *w.items, path + "[]");
      case AvroType::kMap: return Reads(*r.values, *w.values, path + "{}");
      default: return "";
    }
  }

 private:
  std::set<std::pair<const Node*, const Node*>> visiting_;
};

}  // namespace

std::string ReaderIncompatibility(DataFormat format, std::string_view reader, std::string_view writer) {
  switch (format) {
    case DataFormat::kJson: {
      json r = json::parse(reader, nullptr, false), w = json::parse(writer, nullptr, false);
      if (r.is_discarded() || w.is_discarded()) return "definition is not valid JSON";
      return JsonReads(r, w, "#", 0);
    }
    case DataFormat::kAvro: {
      auto r = format::avro::Schema::Parse(reader);
      auto w = format::avro::Schema::Parse(writer);
      if (!r.ok() || !w.ok()) return "definition is not a valid Avro schema";
      AvroResolver resolver;
      return resolver.Reads((*r)->root(), (*w)->root(), "$");
    }
    case DataFormat::kProtobuf: return "";
  }
  return "";
}

std::string Incompatibility(DataFormat format, Compatibility mode, std::string_view new_def, std::string_view old_def) {
  bool backward = mode == Compatibility::kBackward || mode == Compatibility::kBackwardAll ||
                  mode == Compatibility::kFull || mode == Compatibility::kFullAll;
  bool forward = mode == Compatibility::kForward || mode == Compatibility::kForwardAll ||
                 mode == Compatibility::kFull || mode == Compatibility::kFullAll;
  if (backward) {
    if (auto e = ReaderIncompatibility(format, new_def, old_def); !e.empty()) return "BACKWARD: " + e;
  }
  if (forward) {
    if (auto e = ReaderIncompatibility(format, old_def, new_def); !e.empty()) return "FORWARD: " + e;
  }
  return "";
}

}  // namespace icestream::registry
