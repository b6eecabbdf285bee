#include "param_sync.h"

#include <algorithm>
#include <map>

#include "mpi_bytes.h"

namespace pipette::cpu {
namespace {

// Every pipeline rank's parameter names, by rank.
std::vector<std::vector<std::string>> NamesByRank(const ParamSet& params, MPI_Comm pp_comm) {
  ByteWriter mine;
  for (const auto& [name, e] : params.entries()) mine.PutString(name);
  std::vector<std::vector<std::string>> names;
  for (const std::vector<char>& bytes : AllGatherBytes(mine.bytes(), pp_comm)) {
    ByteReader reader(bytes);
    names.emplace_back();
    while (!reader.done()) names.back().push_back(reader.GetString());
  }
  return names;
}

}  // namespace

void AllReduceGrads(ParamSet& params, const std::vector<std::string>& names, MPI_Comm comm) {
  std::vector<Param*> order;
  if (names.empty()) {
    for (auto& [name, e] : params.entries()) order.push_back(e.copies.front());
  } else {
    for (const std::string& name : names) order.push_back(params.entries().at(name).copies.front());
  }
  std::size_t total = 0;
  for (const Param* p : order) total += p->grad.size();
  std::vector<float> buffer(total);
  std::size_t at = 0;
  for (const Param* p : order) {
    std::copy(p->grad.data(), p->grad.data() + p->grad.size(), buffer.data() + at);
    at += p->grad.size();
  }
  MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()), MPI_FLOAT, MPI_SUM,
                comm);
  at = 0;
  for (Param* p : order) {
    std::copy(buffer.data() + at, buffer.data() + at + p->grad.size(), p->grad.data());
    at += p->grad.size();
  }
}

SharedGroup::~SharedGroup() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

SharedGroup::SharedGroup(SharedGroup&& other) noexcept
    : comm_(other.comm_), names_(std::move(other.names_)) {
  other.comm_ = MPI_COMM_NULL;
}

std::vector<SharedGroup> MakeSharedGroups(const ParamSet& params, MPI_Comm pp_comm, int pp_rank) {
  std::map<std::string, std::vector<int>> holders;
  const std::vector<std::vector<std::string>> names = NamesByRank(params, pp_comm);
  for (std::size_t r = 0; r < names.size(); ++r) {
    for (const std::string& name : names[r]) holders[name].push_back(static_cast<int>(r));
  }
  std::map<std::vector<int>, std::vector<std::string>> sets;
  for (const auto& [name, ranks] : holders) {
    if (ranks.size() > 1) sets[ranks].push_back(name);
  }
  std::vector<SharedGroup> groups;
  for (const auto& [ranks, set_names] : sets) {  // same order on every rank: split is collective
    const bool member = std::find(ranks.begin(), ranks.end(), pp_rank) != ranks.end();
    MPI_Comm comm;
    MPI_Comm_split(pp_comm, member ? 0 : MPI_UNDEFINED, pp_rank, &comm);
    if (member) groups.emplace_back(comm, set_names);
  }
  return groups;
}

std::set<std::string> OwnedNames(const ParamSet& params, MPI_Comm pp_comm, int pp_rank) {
  std::map<std::string, int> owner;
  const std::vector<std::vector<std::string>> names = NamesByRank(params, pp_comm);
  for (std::size_t r = 0; r < names.size(); ++r) {
    for (const std::string& name : names[r]) owner.emplace(name, static_cast<int>(r));
  }
  std::set<std::string> owned;
  for (const auto& [name, r] : owner) {
    if (r == pp_rank) owned.insert(name);
  }
  return owned;
}

Result<NamedTensors> GatherTensors(const ParamSet& params, const std::set<std::string>& owned,
                                   bool grads, bool send) {
  ByteWriter mine;
  if (send) {
    for (const auto& [name, e] : params.entries()) {
      if (!owned.contains(name)) continue;
      const Tensor& t = grads ? e.copies.front()->grad : e.copies.front()->value;
      mine.PutString(name);
      mine.Put(static_cast<std::uint64_t>(t.size()));
      mine.PutBytes(t.data(), static_cast<std::size_t>(t.bytes()));
    }
  }
  NamedTensors out;
  PIPETTE_ASSIGN_OR_RETURN(const std::vector<std::vector<char>> gathered,
                           GatherBytes(mine.bytes(), MPI_COMM_WORLD));
  for (const std::vector<char>& bytes : gathered) {
    ByteReader reader(bytes);
    while (!reader.done()) {
      std::vector<float>& values = out[reader.GetString()];
      values.resize(reader.Get<std::uint64_t>());
      reader.GetBytes(values.data(), values.size() * sizeof(float));
    }
  }
  return out;
}

}  // namespace pipette::cpu
