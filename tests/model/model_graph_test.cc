#include "pipette/model/model_graph.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace pipette {
namespace {

// A graph of `n` layers named "l0", "l1", ... and the given edges.
ModelGraph Graph(std::size_t n, const std::vector<std::pair<LayerId, LayerId>>& edges) {
  ModelGraph model;
  model.name = "g";
  for (std::size_t i = 0; i < n; ++i) {
    Layer layer;
    layer.name = "l" + std::to_string(i);
    model.AddLayer(std::move(layer));
  }
  for (auto [from, to] : edges) model.Connect(from, to, 1);
  return model;
}

TEST(ModelGraph, TopologicalOrderKeepsIdsWhereTheEdgesAllow) {
  const ModelGraph model = Graph(4, {{2, 0}, {0, 1}, {3, 1}});
  Result<std::vector<LayerId>> order = model.TopologicalOrder();
  ASSERT_TRUE(order.ok()) << order.status().message();
  EXPECT_EQ(*order, (std::vector<LayerId>{2, 0, 3, 1}));
  EXPECT_TRUE(model.FindCycle().empty());
}

TEST(ModelGraph, FindCycleStartsAtItsSmallestIdInDataFlowOrder) {
  // 0 -> 1 -> 3 -> 0 is a cycle; 2 hangs off it downstream and 4 is a separate source.
  const ModelGraph model = Graph(5, {{4, 1}, {0, 1}, {1, 3}, {3, 0}, {3, 2}});
  EXPECT_EQ(model.FindCycle(), (std::vector<LayerId>{0, 1, 3}));
  Result<std::vector<LayerId>> order = model.TopologicalOrder();
  ASSERT_FALSE(order.ok());
  EXPECT_EQ(order.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(order.status().message(),
            "model 'g': layer 'l0' is on a cycle: a model graph must be acyclic");
}

TEST(ModelGraph, FindCycleFindsASelfLoop) {
  EXPECT_EQ(Graph(2, {{0, 1}, {1, 1}}).FindCycle(), (std::vector<LayerId>{1}));
}

}  // namespace
}  // namespace pipette
