// ResultsFile: a benchmark's JSON results, rewritten whole after every part, so that a run that is
// killed or fails midway keeps every number measured before. A part that throws (a CUDA error, a
// cuBLASLt call without an algorithm) is recorded under "errors" as {"part", "error"}, said on
// stderr, and the run goes on with the next part: a later part may still measure (a sticky CUDA
// error fails every later part too, each naming its own). The file is replaced atomically
// (written beside, then renamed): a reader never sees half a file. Not thread-safe.
//
// Example:
//   ResultsFile results(json_path);  // empty path: kept in memory only
//   results.json()["device"] = DeviceDescription();
//   results.Run("stage gpt3-1.3b", [&] { results.json()["stages"].push_back(Measure(...)); });
//   return results.failed() ? 1 : 0;
#pragma once

#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace pipette {

class ResultsFile {
 public:
  explicit ResultsFile(std::string path) : path_(std::move(path)) { Write(); }

  nlohmann::ordered_json& json() { return json_; }
  // Whether a part has thrown.
  bool failed() const { return json_.contains("errors"); }

  // Runs `part`; records its exception, if any, under "errors" with `name`. Rewrites the file
  // either way. Returns whether the part ran to its end.
  bool Run(const std::string& name, const std::function<void()>& part) {
    bool ok = true;
    try {
      part();
    } catch (const std::exception& e) {
      ok = Fail(name, e.what());
    } catch (...) {
      ok = Fail(name, "an exception that is not a std::exception");
    }
    Write();
    return ok;
  }

  // Rewrites the file with what json() holds now. Returns false (and says so) when it cannot.
  bool Write() const {
    if (path_.empty()) return true;
    const std::string part = path_ + ".part";
    {
      std::ofstream out(part);
      out << json_.dump(2) << "\n";
      if (!out) {
        std::fprintf(stderr, "cannot write %s\n", part.c_str());
        return false;
      }
    }
    if (std::rename(part.c_str(), path_.c_str()) != 0) {
      std::fprintf(stderr, "cannot rename %s to %s\n", part.c_str(), path_.c_str());
      return false;
    }
    return true;
  }

 private:
  bool Fail(const std::string& name, const std::string& what) {
    std::fprintf(stderr, "part '%s' failed: %s\n", name.c_str(), what.c_str());
    json_["errors"].push_back({{"part", name}, {"error", what}});
    return false;
  }

  std::string path_;
  nlohmann::ordered_json json_ = nlohmann::ordered_json::object();
};

}  // namespace pipette
