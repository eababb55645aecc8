// ONNX initializers in external data files: read only from regular files
// inside the model's resolved folder, exactly the tensor's bytes, and every
// other case an error that names the initializer and the file (a symbolic
// link out of the folder, a linked folder, a FIFO, a folder, a sparse huge
// file, an offset that is not a number).

#include "locus/Import/Onnx.h"
#include "locus/locus.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

/// A folder of its own per test, removed afterwards.
class ExternalData : public ::testing::Test {
protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("locus_ext_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "model");
    model_ = (root_ / "model" / "m.onnx").string();
  }
  void TearDown() override { fs::remove_all(root_); }

  /// y = x + w with w (4 floats) in `location`, at `offset` when given.
  void writeModel(const std::string &location, const std::string &offset = "",
                  const std::string &length = "") {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(13);
    onnx::GraphProto *g = m.mutable_graph();
    g->set_name("g");
    onnx::TensorProto *w = g->add_initializer();
    w->set_name("w");
    w->add_dims(4);
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto entry = [&](const char *key, const std::string &value) {
      if (value.empty())
        return;
      onnx::StringStringEntryProto *e = w->add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    entry("location", location);
    entry("offset", offset);
    entry("length", length);
    for (const char *name : {"x", "y"}) {
      onnx::ValueInfoProto *v =
          name[0] == 'x' ? g->add_input() : g->add_output();
      v->set_name(name);
      auto *t = v->mutable_type()->mutable_tensor_type();
      t->set_elem_type(onnx::TensorProto::FLOAT);
      t->mutable_shape()->add_dim()->set_dim_value(4);
    }
    onnx::NodeProto *add = g->add_node();
    add->set_op_type("Add");
    add->add_input("x");
    add->add_input("w");
    add->add_output("y");
    std::ofstream(model_, std::ios::binary) << m.SerializeAsString();
  }

  static void writeFloats(const fs::path &path, std::vector<float> values) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(values.data()),
               static_cast<std::streamsize>(values.size() * 4));
  }

  /// The import's error text; "" when it succeeds.
  std::string importError() {
    try {
      locus::importOnnx(model_);
      return "";
    } catch (const locus::Error &e) {
      return e.what();
    }
  }

  fs::path root_;
  std::string model_;
};

TEST_F(ExternalData, AFileInTheFolderIsRead) {
  writeFloats(root_ / "model" / "w.bin", {9, 1, 2, 3, 4});
  writeModel("w.bin", "4");
  locus::Graph g = locus::importOnnx(model_);
  ASSERT_EQ(g.parameters().size(), 1u);
  EXPECT_EQ(g.initialValue(g.parameters()[0]),
            (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(ExternalData, ALinkInsideTheFolderIsRead) {
  writeFloats(root_ / "model" / "w.bin", {1, 2, 3, 4});
  fs::create_symlink("w.bin", root_ / "model" / "link.bin");
  writeModel("link.bin");
  EXPECT_EQ(importError(), "");
}

TEST_F(ExternalData, ALinkOutOfTheFolderIsRefused) {
  writeFloats(root_ / "secret.bin", {1, 2, 3, 4});
  fs::create_symlink(root_ / "secret.bin", root_ / "model" / "w.bin");
  writeModel("w.bin");
  std::string e = importError();
  EXPECT_NE(e.find("initializer 'w': its external data"), std::string::npos)
      << e;
  EXPECT_NE(e.find("outside the model's folder"), std::string::npos) << e;
}

TEST_F(ExternalData, ALinkedFolderOutOfTheFolderIsRefused) {
  fs::create_directories(root_ / "elsewhere");
  writeFloats(root_ / "elsewhere" / "w.bin", {1, 2, 3, 4});
  fs::create_directory_symlink(root_ / "elsewhere", root_ / "model" / "data");
  writeModel("data/w.bin");
  EXPECT_NE(importError().find("outside the model's folder"),
            std::string::npos);
}

TEST_F(ExternalData, AFifoIsRefusedWithoutHanging) {
  ASSERT_EQ(::mkfifo((root_ / "model" / "w.bin").c_str(), 0600), 0);
  writeModel("w.bin");
  EXPECT_NE(importError().find("is not a regular file"), std::string::npos);
}

TEST_F(ExternalData, AFolderIsRefused) {
  fs::create_directories(root_ / "model" / "w.bin");
  writeModel("w.bin");
  EXPECT_NE(importError().find("is not a regular file"), std::string::npos);
}

TEST_F(ExternalData, AHugeSparseFileIsRefusedBeforeReading) {
  {
    std::ofstream f(root_ / "model" / "w.bin", std::ios::binary);
  }
  fs::resize_file(root_ / "model" / "w.bin", uintmax_t(8) << 30);
  writeModel("w.bin");
  std::string e = importError();
  EXPECT_NE(e.find("has 8589934592 bytes from offset 0; the tensor takes 16"),
            std::string::npos)
      << e;
}

TEST_F(ExternalData, OffsetsAndLengthsAreCheckedNumbers) {
  writeFloats(root_ / "model" / "w.bin", {1, 2, 3, 4});
  writeModel("w.bin", "abc");
  EXPECT_NE(importError().find("external data offset 'abc' is not a byte "
                               "count"),
            std::string::npos);
  writeModel("w.bin", "99999999999999999999");
  EXPECT_NE(importError().find("offset '99999999999999999999' is not a byte "
                               "count"),
            std::string::npos);
  writeModel("w.bin", "-4");
  EXPECT_NE(importError().find("offset '-4' is not a byte count"),
            std::string::npos);
  writeModel("w.bin", "8");
  EXPECT_NE(importError().find("has 8 bytes from offset 8; the tensor takes "
                               "16"),
            std::string::npos);
  writeModel("w.bin", "", "64");
  EXPECT_NE(importError().find("lies outside"), std::string::npos);
}

} // namespace
