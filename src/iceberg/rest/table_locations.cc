// Table location rules of the REST catalog (see table_locations.h).
#include "iceberg/rest/table_locations.h"

#include <fmt/format.h>

#include <deque>

namespace icestream::iceberg::rest {

namespace {

// Without trailing slashes; "file:/path" (as Java writes it) as "file:///path".
std::string Trimmed(std::string_view s) {
  std::string out(s);
  if (out.rfind("file:/", 0) == 0 && out.rfind("file:///", 0) != 0)
    out = "file:///" + out.substr(6);
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

// a == b, or one lies inside the other (compared as paths: "t1" and "t10" do not overlap).
bool Overlap(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) std::swap(a, b);
  return b.rfind(a, 0) == 0 && (b.size() == a.size() || b[a.size()] == '/');
}

std::string Shown(std::string_view s) {
  return s.size() <= 200 ? std::string(s) : std::string(s.substr(0, 200)) + "...";
}

}  // namespace

Status CheckTableLocation(Catalog* catalog, std::string_view root, std::string_view location,
                          const TableIdentifier* self, bool inside_root) {
  std::string root_text = Trimmed(root);
  std::string loc_text = Trimmed(location);
  std::string_view root_view = root_text, loc = loc_text;
  if (inside_root) {
    bool under = loc.size() > root_view.size() + 1 && loc.rfind(root_view, 0) == 0 &&
                 loc[root_view.size()] == '/';
    if (!under) {
      return InvalidArgument(fmt::format(
          "table location '{}' is not inside the warehouse: a table's location must be a folder "
          "below {}/ (the warehouse root itself is shared by every table)",
          Shown(location), root_view));
    }
    std::string_view rest = loc.substr(root_view.size() + 1);
    for (size_t start = 0; start <= rest.size();) {
      size_t slash = rest.find('/', start);
      std::string_view seg =
          rest.substr(start, slash == std::string_view::npos ? rest.npos : slash - start);
      if (seg.empty() || seg == "." || seg == "..") {
        return InvalidArgument(fmt::format(
            "table location '{}' has an empty, '.' or '..' path segment", Shown(location)));
      }
      if (slash == std::string_view::npos) break;
      start = slash + 1;
    }
  }
  // Every live table of the warehouse, namespace by namespace (nested ones too).
  std::deque<Namespace> pending;
  ASSIGN_OR_RETURN(auto top, catalog->ListNamespaces({}));
  for (auto& ns : top) pending.push_back(std::move(ns));
  while (!pending.empty()) {
    Namespace ns = std::move(pending.front());
    pending.pop_front();
    auto children = catalog->ListNamespaces(ns);
    if (children.ok()) {
      for (auto& c : *children) pending.push_back(std::move(c));
    }
    auto tables = catalog->ListTables(ns);
    if (!tables.ok()) continue;  // dropped meanwhile
    for (const auto& id : *tables) {
      if (self && id == *self) continue;
      auto t = catalog->LoadTable(id);
      if (!t.ok()) continue;
      std::string other = Trimmed(t->metadata.location);
      if (Overlap(loc, other)) {
        std::string name;
        for (const auto& level : id.ns) name += level + ".";
        return InvalidArgument(fmt::format(
            "table location '{}' overlaps the location of table {}{} ({}): tables must not "
            "share files",
            Shown(location), name, id.name, Shown(other)));
      }
    }
  }
  return Status::OK();
}

}  // namespace icestream::iceberg::rest
