// The CUDA engine's host-side logic, checked without a GPU (label unit): the mapping of a
// row-major GEMM onto cuBLASLt's column-major product, and the virtual-ranks hub that the ranks'
// threads meet in (messages, meetings, failures, timeouts).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "cuda/device_tensor.h"
#include "cuda/gemm_plan.h"
#include "cuda/virtual_fabric.h"

namespace pipette::cuda {
namespace {

// Row-major C = op(A) op(B) + C the plain way.
void RowMajorGemm(bool ta, bool tb, int m, int n, int k, const std::vector<float>& a, int lda,
                  const std::vector<float>& b, int ldb, std::vector<float>& c, int ldc) {
  for (int r = 0; r < m; ++r) {
    for (int col = 0; col < n; ++col) {
      double sum = 0;
      for (int l = 0; l < k; ++l) {
        const float x = ta ? a[l * lda + r] : a[r * lda + l];
        const float y = tb ? b[col * ldb + l] : b[l * ldb + col];
        sum += static_cast<double>(x) * y;
      }
      c[r * ldc + col] += static_cast<float>(sum);
    }
  }
}

// What cuBLASLt computes for `g` (column-major, op per operand), the plain way.
void ColumnMajorProduct(const ColumnMajorGemm& g, const std::vector<float>& first,
                        const std::vector<float>& second, std::vector<float>& c) {
  auto at = [](const std::vector<float>& mat, int ld, bool t, int i, int j) {
    return t ? mat[j + i * ld] : mat[i + j * ld];  // op(X)(i, j) of a column-major X
  };
  for (int i = 0; i < g.m; ++i) {
    for (int j = 0; j < g.n; ++j) {
      double sum = 0;
      for (int l = 0; l < g.k; ++l) {
        sum += static_cast<double>(at(first, g.first_ld, g.first_op_t, i, l)) *
               at(second, g.second_ld, g.second_op_t, l, j);
      }
      c[i + j * g.c_ld] += static_cast<float>(sum);
    }
  }
}

TEST(AsColumnMajor, ComputesTheRowMajorProductForEveryTransposition) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  const int m = 5, n = 7, k = 3;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      // Padded row strides, as the engine's column blocks of wider matrices have.
      const int lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 1, ldc = n + 3;
      std::vector<float> a((ta ? k : m) * lda), b((tb ? n : k) * ldb), c(m * ldc);
      for (float& x : a) x = u(rng);
      for (float& x : b) x = u(rng);
      std::vector<float> expected(c.size(), 0.5f), actual(c.size(), 0.5f);
      RowMajorGemm(ta, tb, m, n, k, a, lda, b, ldb, expected, ldc);
      const ColumnMajorGemm g = AsColumnMajor(ta, tb, m, n, k, lda, ldb, ldc);
      EXPECT_GE(g.first_ld, g.first_rows);
      EXPECT_GE(g.second_ld, g.second_rows);
      EXPECT_EQ(g.first_op_t ? g.first_rows : g.first_cols, k);
      ColumnMajorProduct(g, b, a, actual);
      for (std::size_t i = 0; i < c.size(); ++i) {
        ASSERT_NEAR(actual[i], expected[i], 1e-5) << "ta " << ta << " tb " << tb << " at " << i;
      }
    }
  }
}

// Every one of three threads passes a meeting only once all three arrived, the last one's
// callback runs exactly once per meeting, and the meeting can be held again (generations).
TEST(VirtualHub, AMeetingWaitsForEveryParticipantAndRepeats) {
  VirtualHub hub(3, 30);
  std::atomic<int> arrived{0}, lasts{0};
  std::vector<int> seen_after(3 * 4, -1);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      for (int round = 0; round < 4; ++round) {
        hub.Meet(
            "m", 3, [&] { ++arrived; }, [&] { ++lasts; }, "test");
        seen_after[round * 3 + r] = arrived.load();  // everyone of this round has arrived
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(lasts.load(), 4);
  for (int round = 0; round < 4; ++round) {
    for (int r = 0; r < 3; ++r) EXPECT_GE(seen_after[round * 3 + r], 3 * (round + 1));
  }
}

TEST(VirtualHub, AMessageWaitsForItsSender) {
  VirtualHub hub(2, 30);
  std::thread sender([&] { hub.Post(1, 0, 42, DeviceTensor(), nullptr); });
  auto [tensor, event] = hub.Take(1, 0, 42, "slot 42 from rank 0");
  sender.join();
  EXPECT_TRUE(tensor.empty());
  EXPECT_EQ(event, nullptr);
}

// A rank that fails ends the others' waits at once, with its reason.
TEST(VirtualHub, AFailureEndsEveryWaitWithTheReason) {
  VirtualHub hub(2, 300);
  std::thread failing([&] { hub.Fail("rank 1 failed: injected"); });
  try {
    hub.Meet(
        "barrier", 2, [] {}, [] {}, "the other ranks to start step 1");
    FAIL() << "the meeting returned although a rank failed";
  } catch (const PeerTimeout& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 failed: injected"), std::string::npos);
  }
  failing.join();
  EXPECT_TRUE(hub.failed());
  EXPECT_THROW(hub.Take(0, 1, 7, "a message"), PeerTimeout);  // later waits end at once too
}

// A peer that never comes ends the wait after the timeout, naming what was awaited.
TEST(VirtualHub, AWaitGivesUpAfterThePeerTimeout) {
  VirtualHub hub(2, 0.2);
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)hub.Take(0, 1, 5, "F3 from rank 1 (step 1)");
    FAIL() << "the wait returned without a message";
  } catch (const PeerTimeout& e) {
    EXPECT_NE(std::string(e.what()).find("F3 from rank 1 (step 1)"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--peer-timeout"), std::string::npos);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(seconds, 0.2);
  EXPECT_LT(seconds, 5.0);
}

}  // namespace
}  // namespace pipette::cuda
