// Catalog names and error statuses.
#include "iceberg/catalog.h"

namespace icestream::iceberg {

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
  return WithSubcode(NotFound("Namespace does not exist: " + NamespaceName(ns)),
                     CatalogError::kNoSuchNamespace);
}
Status NoSuchTableError(const TableIdentifier& id) {
  return WithSubcode(NotFound("Table does not exist: " + TableName(id)),
                     CatalogError::kNoSuchTable);
}
Status NamespaceNotEmptyError(const Namespace& ns) {
  return WithSubcode(FailedPrecondition("Namespace is not empty: " + NamespaceName(ns)),
                     CatalogError::kNamespaceNotEmpty);
}
bool IsNoSuchNamespace(const Status& st) { return st.Is(CatalogError::kNoSuchNamespace); }
bool IsNoSuchTable(const Status& st) { return st.Is(CatalogError::kNoSuchTable); }
bool IsNamespaceNotEmpty(const Status& st) { return st.Is(CatalogError::kNamespaceNotEmpty); }

Result<LoadedTable> Catalog::CommitTableFenced(const TableIdentifier& id,
                                               const std::vector<TableRequirement>&,
                                               const std::vector<TableUpdate>&,
                                               const CommitFence&) {
  return FailedPrecondition(
      "the catalog cannot check a commit fence in its own transaction; table " + TableName(id) +
      " was not changed");
}

}  // namespace icestream::iceberg
