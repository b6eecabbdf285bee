#include "pipette/common/host_machine.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <fstream>
#include <string>
#include <thread>

namespace pipette {
namespace {

cpu_set_t Affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  return set;
}

TEST(HostMachine, UsableCoresIsTheAffinityMask) {
  cpu_set_t set = Affinity();
  EXPECT_EQ(UsableCores(), CPU_COUNT(&set));
}

// `taskset -c N` narrows the mask: the probe follows it. Narrowed on a thread of its own
// (sched_setaffinity(0) sets the calling thread's), so the test process keeps its cores.
TEST(HostMachine, UsableCoresFollowsANarrowedMask) {
  cpu_set_t all = Affinity();
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  int narrowed = -1;
  std::thread pinned([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    narrowed = UsableCores();
  });
  pinned.join();
  EXPECT_EQ(narrowed, 1);
}

TEST(HostMachine, MemTotalBytesIsMeminfosFirstLineInBytes) {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  long long kib = 0;
  ASSERT_TRUE(in >> key >> kib >> unit);
  ASSERT_EQ(key, "MemTotal:");
  ASSERT_EQ(unit, "kB");
  EXPECT_EQ(MemTotalBytes(), kib * 1024);
}

}  // namespace
}  // namespace pipette
