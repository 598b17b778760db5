// Where a table of the REST catalog may live. An engine's orphan cleanup deletes every
// file under a table's location that its metadata does not reference, so two live tables
// whose locations overlap (equal, or one inside the other, or a table at the warehouse
// root) delete each other's files. CreateTable, a commit's set-location and registerTable
// therefore refuse (BadRequestException, 400) a location that
//   - is not strictly inside the warehouse root (a folder below it, with no empty, "." or
//     ".." path segment), or
//   - equals, contains or lies inside the location of another live table of the
//     warehouse.
// A dropped table's location is free again.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "iceberg/catalog.h"

namespace icestream::iceberg::rest {

// `root`: the warehouse's root URI (no trailing '/'). `self`: the table being moved or
// registered (its own location is no conflict); null for a new table. `inside_root`:
// whether the location must lie under the root (registerTable may name a table whose
// files were written elsewhere; it must still not overlap a live table).
Status CheckTableLocation(Catalog* catalog, std::string_view root, std::string_view location,
                          const TableIdentifier* self, bool inside_root = true);

}  // namespace icestream::iceberg::rest
