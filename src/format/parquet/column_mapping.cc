// Target leaves <- file columns, by field id (Iceberg spec "Schema Evolution").
#include "format/parquet/column_mapping.h"

#include <algorithm>
#include <string>
#include <utility>

namespace icestream::format::parquet {

using iceberg::TypeId;

namespace {

std::string KindName(ShredNode::Kind k) {
  switch (k) {
    case ShredNode::Kind::kPrimitive:
      return "primitive";
    case ShredNode::Kind::kStruct:
      return "struct";
    case ShredNode::Kind::kList:
      return "list";
    case ShredNode::Kind::kMap:
      return "map";
  }
  return "?";
}

std::string TypeName(const iceberg::Type& t) {
  return t.is_primitive() ? iceberg::PrimitiveTypeName(t) : "nested";
}

// Pairs (source def, target def) of the nodes on the path from the root, in order.
using Pairs = std::vector<std::pair<int16_t, int16_t>>;

std::vector<int16_t> DefMap(const Pairs& pairs, int16_t source_max_def) {
  std::vector<int16_t> map(static_cast<size_t>(source_max_def) + 1, 0);
  for (int16_t d = 0; d <= source_max_def; ++d) {
    int16_t t = 0;
    for (const auto& [s, tgt] : pairs) {
      if (s <= d) t = tgt;
    }
    map[static_cast<size_t>(d)] = t;
  }
  return map;
}

struct Anchor {
  const ShredNode* source = nullptr;  // nullptr = the root
  Pairs pairs;
  int16_t rep = 0;  // repetition level of an entry that starts a new instance of it
};

struct Planner {
  const FileSchema& source;
  const ParquetSchema& target;
  std::vector<LeafPlan>* plans;
  // The target is the file's own schema (cat, a plain copy): synthetic ids match too.
  bool own_schema;

  Status Refuse(const ShredNode& t, const std::string& why) const {
    return InvalidArgument("field " + std::to_string(t.field_id) + " (" + t.name + "): " + why);
  }

  Result<ValueConversion> Conversion(const ShredNode& t, const SourceLeaf& s) const {
    const iceberg::Type& tt = *t.type;
    const iceberg::Type& st = s.type;
    const ColumnDescriptor& tc = target.columns()[static_cast<size_t>(t.leaf_begin)];
    if (tt.id == TypeId::kDecimal && st.id == TypeId::kDecimal) {
      if (tt.scale != st.scale || tt.precision < st.precision) {
        return Refuse(t, "decimal(" + std::to_string(st.precision) + "," +
                             std::to_string(st.scale) + ") in the file cannot be read as " +
                             TypeName(tt));
      }
      if (s.physical == tc.physical &&
          (s.physical != PhysicalType::kFixedLenByteArray || s.type_length == tc.type_length)) {
        return ValueConversion::kNone;
      }
      return ValueConversion::kDecimal;
    }
    if (tt == st) {
      switch (s.interp) {
        case SourceLeaf::Interp::kUnsigned32:
          return ValueConversion::kUInt32ToInt64;
        case SourceLeaf::Interp::kMillis:
          return ValueConversion::kMillisToMicros;
        case SourceLeaf::Interp::kAsIs:
          break;
      }
      if (s.physical != tc.physical) {
        return Refuse(t, "stored as " + PhysicalTypeName(s.physical) + " in the file");
      }
      return ValueConversion::kNone;
    }
    if (tt.id == TypeId::kLong && st.id == TypeId::kInt && s.physical == PhysicalType::kInt32) {
      return ValueConversion::kInt32ToInt64;
    }
    if (tt.id == TypeId::kDouble && st.id == TypeId::kFloat && s.physical == PhysicalType::kFloat) {
      return ValueConversion::kFloatToDouble;
    }
    return Refuse(t, TypeName(st) + " in the file cannot be read as " + TypeName(tt));
  }

  // Target subtree `t` whose field the file lacks: every leaf under it is null-filled
  // from the anchor's presence.
  Status Absent(const ShredNode& t, const Anchor& anchor) {
    if (source.is_skipped_id(t.field_id)) {
      return Refuse(t, "the file's column has a type the reader does not support");
    }
    for (int leaf = t.leaf_begin; leaf < t.leaf_end; ++leaf) {
      const ColumnDescriptor& tc = target.columns()[static_cast<size_t>(leaf)];
      LeafPlan p;
      p.target_leaf = leaf;
      p.nulls = true;
      p.rep_limit = anchor.rep;
      int16_t anchor_def = anchor.pairs.back().second;
      if (anchor_def >= tc.max_def) {
        return Refuse(t, "required, and missing from the file");
      }
      if (anchor.source == nullptr) {
        p.source_leaf = -1;
        p.def_map = {0};
      } else {
        // The anchor's column with the fewest repetition levels: the fewest entries to skip.
        const FileSchema& fs = source;
        int best = -1;
        for (int d = anchor.source->leaf_begin; d < anchor.source->leaf_end; ++d) {
          int f = fs.file_leaf(d);
          if (best < 0 || fs.leaves()[static_cast<size_t>(f)].max_rep <
                              fs.leaves()[static_cast<size_t>(best)].max_rep) {
            best = f;
          }
        }
        if (best < 0) return Internal("anchor without columns");
        p.source_leaf = best;
        p.def_map = DefMap(anchor.pairs, fs.leaves()[static_cast<size_t>(best)].max_def);
      }
      plans->push_back(std::move(p));
    }
    return Status::OK();
  }

  // `t` is a target node, `s` its match in the file (same field id).
  Status Present(const ShredNode& t, const ShredNode& s, Pairs pairs, int16_t rep) {
    if (t.kind != s.kind)
      return Refuse(t, KindName(s.kind) + " in the file, " + KindName(t.kind) + " in the target");
    if (!t.optional && s.optional)
      return Refuse(t, "optional in the file but required in the target");
    pairs.emplace_back(s.def, t.def);
    switch (t.kind) {
      case ShredNode::Kind::kPrimitive: {
        const int file_leaf = source.file_leaf(s.leaf_begin);
        const SourceLeaf& sl = source.leaves()[static_cast<size_t>(file_leaf)];
        LeafPlan p;
        p.target_leaf = t.leaf_begin;
        p.source_leaf = file_leaf;
        p.rep_limit = sl.max_rep;
        p.def_map = DefMap(pairs, sl.max_def);
        ASSIGN_OR_RETURN(p.conversion, Conversion(t, sl));
        const ColumnDescriptor& tc = target.columns()[static_cast<size_t>(t.leaf_begin)];
        if (tc.max_rep != sl.max_rep)
          return Refuse(t, "nested in a different number of lists or maps");
        plans->push_back(std::move(p));
        return Status::OK();
      }
      case ShredNode::Kind::kList:
      case ShredNode::Kind::kMap:
        // The repeated group: present when the list or map has an entry.
        pairs.emplace_back(static_cast<int16_t>(s.def + 1), static_cast<int16_t>(t.def + 1));
        rep = t.rep;
        if (s.rep != t.rep) return Refuse(t, "nested in a different number of lists or maps");
        break;
      case ShredNode::Kind::kStruct:
        break;
    }
    Anchor anchor{&s, pairs, rep};
    for (const ShredNode& tc : t.children) {
      RETURN_IF_ERROR(Child(tc, &s, anchor));
    }
    return Status::OK();
  }

  // A child `t` of the target node whose match in the file is `s_parent` (nullptr = root).
  Status Child(const ShredNode& t, const ShredNode* s_parent, const Anchor& anchor) {
    const ShredNode* s =
        source.is_synthetic(t.field_id) && !own_schema ? nullptr : source.FindNode(t.field_id);
    if (s == nullptr) return Absent(t, anchor);
    if (source.Parent(t.field_id) != s_parent) return Refuse(t, "has another parent in the file");
    return Present(t, *s, anchor.pairs, anchor.rep);
  }
};

}  // namespace

Result<std::vector<LeafPlan>> PlanCopy(const FileSchema& source, const ParquetSchema& target) {
  std::vector<LeafPlan> plans;
  Planner planner{
      source, target, &plans,
      source.parquet_schema() != nullptr && target.iceberg_schema() == source.iceberg_schema()};
  Anchor root{nullptr, {{0, 0}}, 0};
  for (const ShredNode& t : target.root().children) {
    RETURN_IF_ERROR(planner.Child(t, nullptr, root));
  }
  std::sort(plans.begin(), plans.end(),
            [](const LeafPlan& a, const LeafPlan& b) { return a.target_leaf < b.target_leaf; });
  if (plans.size() != target.columns().size())
    return Internal("copy plan does not cover every target leaf");
  return plans;
}

}  // namespace icestream::format::parquet
