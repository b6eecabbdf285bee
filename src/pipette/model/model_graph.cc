#include "pipette/model/model_graph.h"

#include <fmt/core.h>

#include <algorithm>
#include <functional>
#include <queue>

namespace pipette {

namespace {

// Kahn's algorithm with a min-heap on ids: among ready layers the smallest id goes first, so a
// builder's insertion order survives wherever the dependencies allow it. Returns every layer that
// is neither on a cycle nor downstream of one.
std::vector<LayerId> KahnOrder(const LayerGraph& graph) {
  const std::size_t n = boost::num_vertices(graph);
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
  return order;
}

// Marks the layers of `order`.
std::vector<bool> Members(const std::vector<LayerId>& order, std::size_t n) {
  std::vector<bool> in(n, false);
  for (LayerId v : order) in[v] = true;
  return in;
}

}  // namespace

Result<std::vector<LayerId>> ModelGraph::TopologicalOrder() const {
  std::vector<LayerId> order = KahnOrder(graph);
  if (order.size() != num_layers()) {
    const std::vector<bool> ordered = Members(order, num_layers());
    const auto v =
        static_cast<LayerId>(std::find(ordered.begin(), ordered.end(), false) - ordered.begin());
    return Status::FailedPrecondition(
        fmt::format("model '{}': layer '{}' is on a cycle: a model graph must be acyclic", name,
                    graph[v].name));
  }
  return order;
}

std::vector<LayerId> ModelGraph::FindCycle() const {
  const std::size_t n = num_layers();
  const std::vector<bool> ordered = Members(KahnOrder(graph), n);
  auto v = static_cast<LayerId>(std::find(ordered.begin(), ordered.end(), false) - ordered.begin());
  if (v == n) return {};
  // Walk upstream through unordered producers (an unordered layer has one) until a layer repeats:
  // the walk from its first visit on is a cycle, against the data flow.
  std::vector<LayerId> walk;
  std::vector<std::size_t> position(n, n);
  while (position[v] == n) {
    position[v] = walk.size();
    walk.push_back(v);
    for (auto [e, end] = boost::in_edges(v, graph); e != end; ++e) {
      if (!ordered[boost::source(*e, graph)]) {
        v = boost::source(*e, graph);
        break;
      }
    }
  }
  std::vector<LayerId> cycle(walk.rbegin(), walk.rend() - static_cast<std::ptrdiff_t>(position[v]));
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  return cycle;
}

std::int64_t ModelGraph::TotalParams() const {
  std::int64_t total = 0;
  for (std::size_t v = 0; v < num_layers(); ++v) total += graph[v].params;
  return total;
}

std::int64_t ModelGraph::ActivatedParams() const {
  std::int64_t total = 0;
  for (std::size_t v = 0; v < num_layers(); ++v) {
    const Layer& layer = graph[v];
    total += layer.params - layer.expert_params + layer.activated_expert_params;
  }
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
