// The communicator's choices that need no second process: which GPU a
// data-parallel rank binds to, and a process no launcher started.

#include "comm.h"

#include <gtest/gtest.h>

#include <vector>

using namespace locus::rt;

TEST(Comm, EachRankBindsToItsOwnGpuWhereThereAreSeveral) {
  // One GPU or none: the default map (every rank on GPU 0, or sim).
  EXPECT_EQ(localDeviceMap(0, 0), "");
  EXPECT_EQ(localDeviceMap(3, 1), "");
  // Several: local rank modulo the GPUs, as DDP's one GPU per rank.
  EXPECT_EQ(localDeviceMap(0, 2), "cuda:0=cuda:0");
  EXPECT_EQ(localDeviceMap(3, 2), "cuda:0=cuda:1");
  EXPECT_EQ(localDeviceMap(5, 8), "cuda:0=cuda:5");
  EXPECT_EQ(localDeviceMap(9, 8), "cuda:0=cuda:1");
  EXPECT_EQ(localDeviceMap(-1, 8), "");
}

TEST(Comm, AProcessNoLauncherStartedIsWorldSizeOne) {
  Comm *comm = nullptr;
  ASSERT_EQ(createComm(comm), nullptr);
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->size, 1);
  EXPECT_EQ(comm->rank, 0);
  EXPECT_EQ(comm->backend, "none");
  EXPECT_EQ(comm->deviceMap, "");
  // Its collectives are the identity: nothing to wait for.
  std::vector<float> data{1.5f, -2.0f};
  EXPECT_EQ(comm->allReduceSum(data.data(), data.size()), nullptr);
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.0f}));
  delete comm;
}
