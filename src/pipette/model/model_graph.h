// ModelGraph: a model as a DAG of layers (Boost Graph), the input of the partitioner.
//
// Vertices carry Layer, edges carry the bytes of the tensor that crosses them (per microbatch).
// Vertex ids are dense (vecS) and stable. Builders (decoder.h, two_tower.h, model_toml.h) add
// layers in a topological order. Attributes carry the architecture facts that parallel-config
// validation needs (0 = unknown, e.g. for a custom TOML model without attention).
// Plain value type; not thread-safe for concurrent mutation.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "pipette/common/status.h"
#include "pipette/model/dtype.h"
#include "pipette/model/layer.h"

namespace pipette {

struct EdgeData {
  std::int64_t bytes = 0;
};

using LayerGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Layer, EdgeData>;
using LayerId = LayerGraph::vertex_descriptor;

// Per-microbatch shape of the work the graph's amounts are computed for.
struct Workload {
  int micro_batch_size = 1;  // sequences per microbatch
  int seq_len = 2048;        // tokens per sequence
  DType dtype = DType::kBF16;
};

struct ModelAttributes {
  int blocks = 0;  // transformer blocks (all towers)
  int hidden = 0;
  int heads = 0;  // attention heads (the text tower's for multimodal models)
  int kv_heads = 0;
  int vocab = 0;
  int experts = 0;  // routed experts per MoE layer (the gcd over them); 0: a dense model
};

class ModelGraph {
 public:
  std::string name;
  Workload workload;
  ModelAttributes attributes;
  LayerGraph graph;

  // Adds a layer and returns its id.
  LayerId AddLayer(Layer layer) { return boost::add_vertex(std::move(layer), graph); }
  // Adds an edge from -> to carrying `bytes`.
  void Connect(LayerId from, LayerId to, std::int64_t bytes) {
    boost::add_edge(from, to, EdgeData{bytes}, graph);
  }

  std::size_t num_layers() const { return boost::num_vertices(graph); }
  const Layer& layer(LayerId id) const { return graph[id]; }

  // Returns the layers in a topological order that keeps ties in id order (so builders' orders
  // are preserved), or FailedPrecondition naming a layer on a cycle.
  Result<std::vector<LayerId>> TopologicalOrder() const;
  // Returns the layers of one cycle in data-flow order (each feeds the next, the last the first),
  // starting from its smallest id; empty when the graph is acyclic.
  std::vector<LayerId> FindCycle() const;
  // Sum of the layers' parameters.
  std::int64_t TotalParams() const;
  // The parameters one token passes through: TotalParams() less the routed experts it does not
  // use (an MoE layer counts top_k of its experts). = TotalParams() for a dense model.
  std::int64_t ActivatedParams() const;
  // Region names in order of first appearance in the topological order.
  std::vector<std::string> Regions() const;
};

}  // namespace pipette
