// SweepSpec: a study written as TOML (docs/experiments.md) and the points it expands to. A spec
// names an experiment, the options every point shares ([fixed]), lists of values whose cartesian
// product is the set of points ([axes]) and the figures drawn from the runs ([[figures]]). This
// file is pure: parsing, validation, expansion, point keys and the child command line of a point;
// running the points is `pipette sweep`'s (sweep_command.cc). Plain values; no shared state.
//
// Example:
//   PIPETTE_ASSIGN_OR_RETURN(SweepSpec spec, LoadSweepSpec("experiments/bubble-p8.toml"));
//   PIPETTE_RETURN_IF_ERROR(CheckSweepOptions(spec, options));  // against simulate's options
//   for (const SweepPoint& point : ExpandPoints(spec)) Run(PointArguments(point), point.key);
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipette/common/status.h"

namespace pipette {

// One TOML scalar of a spec, as the command line writes it.
struct SweepValue {
  enum class Kind { kString, kInteger, kFloat, kBool };
  Kind kind = Kind::kString;
  std::string text;  // "1f1b", "8", "0.5", "true": the canonical form used in point keys
  bool operator==(const SweepValue&) const = default;
};

// A setting of a point: an option (long name without "--", or a one-letter short name) and value.
struct SweepSetting {
  std::string key;
  SweepValue value;
  bool operator==(const SweepSetting&) const = default;
};

// An axis: one key and its values (`m = [8, 16]`), or several keys varied together, one tuple of
// values per step (`"pp,dp" = [[8, 16], [16, 8]]`: two points, not four).
struct SweepAxis {
  std::vector<std::string> keys;                // one or more
  std::vector<std::vector<SweepValue>> values;  // non-empty; each holds one value per key
};

// A figure's condition on one setting: the point's value must be one of `values`.
struct SweepCondition {
  std::string key;
  std::vector<SweepValue> values;
};

// A [[figures]] entry: `pipette plot KIND` over the finished runs of the points `where` selects.
struct SweepFigure {
  std::string kind;  // timeline, bubble, memory, compare, steptime or errors
  std::string out;   // as written: relative paths are relative to the spec file's directory
  std::vector<SweepCondition> where;  // empty selects every point
  std::string x;  // bubble, steptime: the configuration key on the x axis (default m); errors:
                  // the key grouping the pairs (default schedule)
  std::string colour_by;  // compare: pipette plot --colour-by (empty: chosen)
  std::string marker_by;  // compare: pipette plot --marker-by (empty: chosen)
};

struct SweepSpec {
  std::string path;                  // the file (messages name it)
  std::string name;                  // the experiment; default: the file's stem
  std::string description;           // optional
  std::string command = "simulate";  // or "train": each point runs under mpirun (p * dp ranks)
  // train only: after each measured point, its prediction `pipette simulate --costs-from RUN
  // [--calibration C]` is recorded at the point key plus PredictedKeySuffix.
  bool predict = false;
  std::string calibration;  // an id or "latest"; empty: none
  // With predict: the fit (an id or "latest", pipette fits) that prices each prediction, `pipette
  // simulate --fit FIT --costs-from RUN` (the measured point's configuration, never its costs);
  // empty: the run's own measured costs.
  std::string fit;
  std::vector<SweepSetting> fixed;  // in file order
  std::vector<SweepAxis> axes;      // in file order
  std::vector<SweepFigure> figures;
  std::string text;  // the file itself, stored as the experiment's spec
};

// The point key of a measured point's prediction is the point's key plus this.
inline constexpr std::string_view kPredictedKeySuffix = ";predicted";

// One point of the sweep: the fixed settings and one value of each axis.
struct SweepPoint {
  std::vector<SweepSetting> settings;  // sorted by key
  std::string key;                     // PointKey(settings)
};

// What a spec key may name: one option of the command the sweep runs.
struct SweepOption {
  std::vector<std::string> names;  // "microbatches" and "m" for -m,--microbatches
  bool is_flag = false;            // takes no value (true/false in a spec)
};

// The commands a sweep runs, the figure kinds and the command-line options the sweep itself sets
// on each child.
inline constexpr std::string_view kSweepCommands[] = {"simulate", "train"};
inline constexpr std::string_view kSweepFigureKinds[] = {"timeline", "bubble",   "memory",
                                                         "compare",  "steptime", "errors"};
inline constexpr std::string_view kSweepReservedOptions[] = {"db", "no-db", "experiment",
                                                             "point-key", "format"};

// Parses and validates `text`, the contents of spec file `path`. Errors (InvalidArgument) start
// with "path:line:" and name the key, the value and the rule: unknown keys, axes that are not
// non-empty lists of scalars (of tuples, for linked keys), a key set twice (in [fixed] and [axes],
// or in two axes), an unknown command or figure kind,
// a figure's `where` naming a key the points do not set, a timeline figure not selecting exactly
// one point, two figures with one `out`.
Result<SweepSpec> ParseSweepSpec(std::string_view text, const std::string& path);
// Reads `path` (at most 1 MiB) and parses it. NotFound when it does not exist, InvalidArgument
// when it is not a regular file or is larger, IoError when it cannot be read; each names the file.
Result<SweepSpec> LoadSweepSpec(const std::string& path);

// Checks every key of [fixed] and [axes] against `options` (the command's): each names exactly one
// option, no two keys name the same option, none is one the sweep sets itself
// (kSweepReservedOptions), flags take true/false and other options take no booleans.
Status CheckSweepOptions(const SweepSpec& spec, const std::vector<SweepOption>& options);

// The points: the cartesian product of the axes in file order, the first axis varying slowest
// (nested loops as written). A spec without axes has one point (its fixed settings).
std::vector<SweepPoint> ExpandPoints(const SweepSpec& spec);

// The MPI processes a `train` point needs: its pipeline ranks (key `pp` or `p`) times its
// data-parallel replicas (`dp`), each 1 when the point does not set it (train's defaults). A value
// that is not a whole number in [1, 2^20] counts as 1: the child then refuses the point itself.
int TrainProcesses(const SweepPoint& point);

// The canonical key of a point: "key=value" for each setting, sorted by key, joined by ';'
// ("ideal-network=true;m=8;pp=8;schedule=1f1b;times=F=1,I=1,W=1").
std::string PointKey(std::vector<SweepSetting> settings);

// The point's settings as command-line arguments, values attached so that none is read as an
// option: "-m8" for one-letter keys, "--pp=8" otherwise, "--recompute" for a true flag, nothing for
// a false one or an empty string (the command's default: `rank-speed = ["", "2=0.5"]`).
std::vector<std::string> PointArguments(const SweepPoint& point);

// Whether `figure`'s `where` selects `point` (every `where` key has one of its values).
bool FigureSelects(const SweepFigure& figure, const SweepPoint& point);

}  // namespace pipette
