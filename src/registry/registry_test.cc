// SchemaRegistry semantics over a real SQLite file: version numbering, idempotent
// registration, FAILURE versions, *_ALL checks from the checkpoint, DISABLED, deletes.
#include "registry/registry.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/testing/status_assertions.h"
#include "common/testing/temp_dir.h"

namespace icestream::registry {
namespace {

TEST(SchemaArnTest, ParsesSchemaAndRegistryArns) {
  auto s = ParseSchemaArn("arn:aws:glue:us-east-1:000000000000:schema/reg/orders.v1");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->region, "us-east-1");
  EXPECT_EQ(s->account, "000000000000");
  EXPECT_EQ(s->registry, "reg");
  EXPECT_EQ(s->schema, "orders.v1");
  EXPECT_FALSE(ParseSchemaArn("arn:aws:glue:us-east-1:000000000000:schema/reg"));
  EXPECT_FALSE(ParseSchemaArn("arn:aws:glue:us-east-1:000000000000:schema//s"));
  EXPECT_FALSE(ParseSchemaArn("arn:aws:glue:us-east-1:000000000000:registry/reg"));
  EXPECT_FALSE(ParseSchemaArn("arn:aws:kinesis:us-east-1:000000000000:schema/reg/s"));
  auto r = ParseRegistryArn("arn:aws-cn:glue:cn-north-1:111122223333:registry/default-registry");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->region, "cn-north-1");
  EXPECT_EQ(r->registry, "default-registry");
  EXPECT_FALSE(ParseRegistryArn("arn:aws:glue:us-east-1:000000000000:registry/"));
  // What the registry writes, it reads back.
  ManualClock clock{0};
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto db, Database::Open(dir.Path("meta.db")));
  ASSERT_OK_AND_ASSIGN(auto reg, SchemaRegistry::Open(db.get(), &clock));
  auto back = ParseSchemaArn(reg->SchemaArn("r", "s"));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->registry, "r");
  EXPECT_EQ(back->schema, "s");
  EXPECT_EQ(ParseRegistryArn(reg->RegistryArn("r"))->registry, "r");
}

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(db_, Database::Open(path_.string()));
    RegistryOptions o;
    o.max_registries = 3;
    ASSERT_OK_AND_ASSIGN(reg_, SchemaRegistry::Open(db_.get(), &clock_, o));
  }
  testing::TempDir tmp_;  // first: outlives the database
  std::filesystem::path path_ = tmp_.path() / "registry.db";
  ManualClock clock_{1700000000000};
  std::unique_ptr<Database> db_;
  std::unique_ptr<SchemaRegistry> reg_;
};

const char* Obj(const char* props, const char* required) {
  static std::string s;
  s = std::string(R"({"type":"object","properties":)") + props + R"(,"required":)" + required + "}";
  return s.c_str();
}

TEST_F(RegistryTest, RegistriesAndLimits) {
  ASSERT_OK(reg_->CreateRegistry("r1", "first", {{"k", "v"}}));
  EXPECT_STATUS(kAlreadyExists, reg_->CreateRegistry("r1", "", {}));
  EXPECT_EQ(reg_->CreateRegistry("r1", "", {}).status().message(),
            "Registry already exists. RegistryName: r1");
  ASSERT_OK_AND_ASSIGN(auto r, reg_->GetRegistry("r1"));
  EXPECT_EQ(r.arn, "arn:aws:glue:us-east-1:000000000000:registry/r1");
  EXPECT_EQ(r.tags.at("k"), "v");
  ASSERT_OK(reg_->CreateRegistry("r2", "", {}));
  ASSERT_OK(reg_->CreateRegistry("r3", "", {}));
  EXPECT_STATUS(kResourceExhausted, reg_->CreateRegistry("r4", "", {}));
  clock_.Advance(1000);
  EXPECT_EQ(reg_->UpdateRegistry("r1", "new")->description, "new");
  EXPECT_GT(reg_->GetRegistry("r1")->updated_ms, reg_->GetRegistry("r1")->created_ms);
  ASSERT_OK(reg_->DeleteRegistry("r3"));
  EXPECT_EQ(reg_->GetRegistry("r3").status().message(), "Registry is not found. RegistryName: r3");
  EXPECT_EQ(reg_->ListRegistries()->size(), 2u);
}

TEST_F(RegistryTest, VersionsCompatibilityAndIdempotence) {
  const std::string v1 = Obj(R"({"id":{"type":"integer"}})", R"(["id"])");
  ASSERT_OK_AND_ASSIGN(auto created,
                       reg_->CreateSchema(kDefaultRegistry, false, "s", DataFormat::kJson,
                                          Compatibility::kBackward, "", {}, v1));
  EXPECT_OK(reg_->GetRegistry(kDefaultRegistry));  // created implicitly
  EXPECT_EQ(created.schema.latest_version, 1);
  EXPECT_EQ(created.schema.next_version, 2);
  EXPECT_EQ(created.schema.checkpoint, 1);
  EXPECT_EQ(created.schema.arn, "arn:aws:glue:us-east-1:000000000000:schema/default-registry/s");
  ASSERT_TRUE(created.version.has_value());
  EXPECT_EQ(created.version->status, VersionStatus::kAvailable);
  EXPECT_STATUS(kNotFound, reg_->CreateSchema("nope", true, "s", DataFormat::kJson,
                                              Compatibility::kBackward, "", {}, v1));

  // The same definition (spelled differently) is the same version.
  auto again = reg_->RegisterVersion(
      kDefaultRegistry, "s",
      R"({ "required" : ["id"], "properties":{"id":{"type":"integer"}}, "type":"object" })");
  ASSERT_OK(again);
  EXPECT_EQ(again->id, created.version->id);
  EXPECT_EQ(again->number, 1);

  // Compatible: v2 AVAILABLE.
  auto v2 =
      reg_->RegisterVersion(kDefaultRegistry, "s",
                            Obj(R"({"id":{"type":"integer"},"n":{"type":"string"}})", R"(["id"])"));
  ASSERT_OK(v2);
  EXPECT_EQ(v2->number, 2);
  EXPECT_EQ(v2->status, VersionStatus::kAvailable);
  // Incompatible (new required field): FAILURE, a new number, latest stays at 2.
  auto bad = reg_->RegisterVersion(
      kDefaultRegistry, "s",
      Obj(R"({"id":{"type":"integer"},"n":{"type":"string"}})", R"(["id","n"])"));
  ASSERT_OK(bad);
  EXPECT_EQ(bad->status, VersionStatus::kFailure);
  EXPECT_EQ(bad->number, 3);
  auto s = reg_->GetSchema(kDefaultRegistry, "s");
  EXPECT_EQ(s->latest_version, 2);
  EXPECT_EQ(s->next_version, 4);
  EXPECT_EQ(reg_->GetVersion(kDefaultRegistry, "s", {true, 0})->number, 2);
  EXPECT_EQ(reg_->GetVersion(kDefaultRegistry, "s", {false, 3})->status, VersionStatus::kFailure);
  EXPECT_EQ(reg_->GetVersionByDefinition(kDefaultRegistry, "s", bad->definition)->id, bad->id);
  EXPECT_STATUS(kNotFound,
                reg_->GetVersionByDefinition(kDefaultRegistry, "s", R"({"type":"string"})"));
  // Malformed definitions are errors, not versions.
  EXPECT_STATUS(kInvalidArgument, reg_->RegisterVersion(kDefaultRegistry, "s", "{"));
  EXPECT_EQ(reg_->ListVersions(kDefaultRegistry, "s")->size(), 3u);

  // BACKWARD_ALL from a checkpoint: v4 must read v1 and v2... but v1 is before the
  // checkpoint set at 2, so only v2 counts.
  ASSERT_OK(reg_->UpdateSchema(kDefaultRegistry, "s", VersionSelector{false, 2},
                               Compatibility::kBackwardAll, std::nullopt));
  EXPECT_EQ(reg_->GetSchema(kDefaultRegistry, "s")->checkpoint, 2);
  auto v4 = reg_->RegisterVersion(
      kDefaultRegistry, "s",
      Obj(R"({"id":{"type":"integer"},"n":{"type":"string"},"z":{"type":"boolean"}})",
          R"(["id"])"));
  EXPECT_EQ(v4->status, VersionStatus::kAvailable);
  EXPECT_EQ(v4->number, 4);
  // A checkpoint must be an AVAILABLE version.
  EXPECT_STATUS(kInvalidArgument,
                reg_->UpdateSchema(kDefaultRegistry, "s", VersionSelector{false, 3}, std::nullopt,
                                   std::nullopt));

  // Deletes: the checkpoint and v1 are protected; missing versions are reported.
  EXPECT_STATUS(kInvalidArgument, reg_->DeleteVersions(kDefaultRegistry, "s", 2, 3));
  ASSERT_OK_AND_ASSIGN(auto errors, reg_->DeleteVersions(kDefaultRegistry, "s", 3, 5));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].number, 5);
  EXPECT_EQ(reg_->GetSchema(kDefaultRegistry, "s")->latest_version, 2);
  EXPECT_STATUS(kNotFound, reg_->GetVersionById(v4->id));
}

TEST_F(RegistryTest, DisabledAndNone) {
  ASSERT_OK(reg_->CreateRegistry("r", "", {}));
  ASSERT_OK(reg_->CreateSchema("r", true, "d", DataFormat::kAvro, Compatibility::kDisabled, "", {},
                               R"("int")"));
  auto st = reg_->RegisterVersion("r", "d", R"("long")").status();
  EXPECT_STATUS(kInvalidArgument, st);
  EXPECT_EQ(st.message(),
            "Compatibility DISABLED does not allow versioning. SchemaId: SchemaId(schemaArn=null, "
            "schemaName=d, registryName=r)");
  ASSERT_OK(reg_->CreateSchema("r", true, "n", DataFormat::kAvro, Compatibility::kNone, "", {},
                               R"("int")"));
  EXPECT_EQ(reg_->RegisterVersion("r", "n", R"("string")")->status, VersionStatus::kAvailable);
  ASSERT_OK(reg_->CreateSchema("r", true, "p", DataFormat::kProtobuf, Compatibility::kFull, "", {},
                               std::nullopt));
  EXPECT_EQ(reg_->GetSchema("r", "p")->latest_version, 0);
  auto first = reg_->RegisterVersion("r", "p", "message A { int32 x = 1; }");
  EXPECT_EQ(first->number, 1);
  EXPECT_EQ(reg_->GetSchema("r", "p")->checkpoint, 1);
  EXPECT_EQ(reg_->ListSchemas(std::string("r"))->size(), 3u);
  EXPECT_STATUS(kNotFound, reg_->ListSchemas(std::string("zz")));
  ASSERT_OK(reg_->DeleteSchema("r", "p"));
  EXPECT_EQ(reg_->GetSchema("r", "p").status().message(),
            "Schema is not found. RegistryName: r, SchemaName: p, SchemaArn: null");
}

}  // namespace
}  // namespace icestream::registry
