#include "pipette/model/model_graph.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <queue>

namespace pipette {

Result<std::vector<LayerId>> ModelGraph::TopologicalOrder() const {
  // Kahn's algorithm with a min-heap on ids: among ready layers the smallest id goes first, so a
  // builder's insertion order survives wherever the dependencies allow it.
  const std::size_t n = num_layers();
  std::vector<std::size_t> indegree(n, 0);
  for (std::size_t v = 0; v < n; ++v) indegree[v] = boost::in_degree(v, graph);
  std::priority_queue<LayerId, std::vector<LayerId>, std::greater<>> ready;
  for (std::size_t v = 0; v < n; ++v) {
    if (indegree[v] == 0) ready.push(v);
  }
  std::vector<LayerId> order;
  order.reserve(n);
  while (!ready.empty()) {
    const LayerId v = ready.top();
    ready.pop();
    order.push_back(v);
    for (auto [e, end] = boost::out_edges(v, graph); e != end; ++e) {
      const LayerId w = boost::target(*e, graph);
      if (--indegree[w] == 0) ready.push(w);
    }
  }
  if (order.size() != n) {
    for (std::size_t v = 0; v < n; ++v) {
      if (indegree[v] > 0) {
        return Status::FailedPrecondition(
            fmt::format("model '{}': layer '{}' is on a cycle: a model graph must be acyclic", name,
                        graph[v].name));
      }
    }
  }
  return order;
}

std::int64_t ModelGraph::TotalParams() const {
  std::int64_t total = 0;
  for (std::size_t v = 0; v < num_layers(); ++v) total += graph[v].params;
  return total;
}

std::vector<std::string> ModelGraph::Regions() const {
  std::vector<std::string> regions;
  Result<std::vector<LayerId>> order = TopologicalOrder();
  if (!order.ok()) return regions;
  for (LayerId v : *order) {
    const std::string& region = graph[v].region;
    if (std::find(regions.begin(), regions.end(), region) == regions.end()) {
      regions.push_back(region);
    }
  }
  return regions;
}

}  // namespace pipette
