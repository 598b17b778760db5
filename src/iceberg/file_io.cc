// Iceberg locations <-> object-store keys.
#include "iceberg/file_io.h"

namespace icestream::iceberg {

FileIO::FileIO(objectstore::ObjectStore* store, std::string bucket)
    : store_(store), bucket_(std::move(bucket)) {
  // Uri(bucket, "x") minus the "x" is the bucket's prefix; drop the separator too.
  root_ = store_->Uri(bucket_, "x");
  root_.pop_back();
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

std::string FileIO::Location(std::string_view key) const { return root_ + "/" + std::string(key); }

Result<std::string> FileIO::KeyOf(std::string_view location) const {
  std::string loc(location);
  // "file:/path" and "file:///path" name the same local file (Java writes the former).
  if (loc.rfind("file:/", 0) == 0 && loc.rfind("file:///", 0) != 0) loc = "file:///" + loc.substr(6);
  if (loc.size() <= root_.size() + 1 || loc.compare(0, root_.size(), root_) != 0 || loc[root_.size()] != '/') {
    return InvalidArgument("location " + std::string(location) + " is outside the warehouse " + root_);
  }
  return loc.substr(root_.size() + 1);
}

Result<std::string> FileIO::Read(std::string_view location) const {
  ASSIGN_OR_RETURN(std::string key, KeyOf(location));
  return store_->Get(bucket_, key);
}

Status FileIO::Write(std::string_view location, std::string_view data, bool if_absent) const {
  ASSIGN_OR_RETURN(std::string key, KeyOf(location));
  objectstore::PutOptions o;
  o.if_none_match = if_absent;
  return store_->Put(bucket_, key, data, o);
}

Status FileIO::Delete(std::string_view location) const {
  ASSIGN_OR_RETURN(std::string key, KeyOf(location));
  return store_->Delete(bucket_, key);
}

Result<std::vector<FileInfo>> FileIO::List(std::string_view location_prefix) const {
  std::string prefix;
  if (location_prefix.size() > root_.size()) {
    ASSIGN_OR_RETURN(prefix, KeyOf(location_prefix));
  }
  auto objects = store_->List(bucket_, prefix);
  if (!objects.ok()) {
    if (objects.status().code() == StatusCode::kNotFound) return std::vector<FileInfo>{};
    return objects.status();
  }
  std::vector<FileInfo> out;
  out.reserve(objects->size());
  for (const auto& o : *objects) out.push_back({Location(o.key), o.size, o.last_modified_ms});
  return out;
}

}  // namespace icestream::iceberg
