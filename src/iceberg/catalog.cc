// Catalog names and error statuses.
#include "iceberg/catalog.h"

namespace icestream::iceberg {

namespace {
constexpr std::string_view kNoSuchNamespace = "Namespace does not exist: ";
constexpr std::string_view kNoSuchTable = "Table does not exist: ";
}  // namespace

std::string NamespaceName(const Namespace& ns) {
  std::string s;
  for (const auto& part : ns) {
    if (!s.empty()) s += '.';
    s += part;
  }
  return s;
}

std::string TableName(const TableIdentifier& id) {
  std::string ns = NamespaceName(id.ns);
  return ns.empty() ? id.name : ns + "." + id.name;
}

Status NoSuchNamespaceError(const Namespace& ns) {
  return NotFound(std::string(kNoSuchNamespace) + NamespaceName(ns));
}
Status NoSuchTableError(const TableIdentifier& id) { return NotFound(std::string(kNoSuchTable) + TableName(id)); }
Status NamespaceNotEmptyError(const Namespace& ns) {
  return FailedPrecondition("Namespace is not empty: " + NamespaceName(ns));
}
bool IsNoSuchNamespace(const Status& st) {
  return st.code() == StatusCode::kNotFound && st.message().rfind(kNoSuchNamespace, 0) == 0;
}
bool IsNoSuchTable(const Status& st) {
  return st.code() == StatusCode::kNotFound && st.message().rfind(kNoSuchTable, 0) == 0;
}

Result<LoadedTable> Catalog::CommitTableFenced(const TableIdentifier& id,
                                               const std::vector<TableRequirement>&,
                                               const std::vector<TableUpdate>&, const CommitFence&) {
  return FailedPrecondition("the catalog cannot check a commit fence in its own transaction; table " +
                            TableName(id) + " was not changed");
}

}  // namespace icestream::iceberg
