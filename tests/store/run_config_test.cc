// The typed run configuration (store/run_config.h): each family writes its keys in the order the
// database has always had them, reads back what it wrote, and the reader tolerates what older
// pipettes wrote (a version-1 database's rows) without inventing values for keys they lacked.
#include "pipette/store/run_config.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "pipette/schedule/uneven_work.h"
#include "pipette/store/experiment_db.h"

namespace pipette {
namespace {

using Json = nlohmann::ordered_json;

TrainingConfig CudaTraining() {
  TrainingConfig c;
  c.engine = "cuda";
  c.model = "tiny";
  c.architecture = ArchitectureConfig{2, 64, 4, 256, 512, 128, true};
  c.schedule = "zb-h1";
  c.p = c.pp = 2;
  c.v = 1;
  c.m = 4;
  c.dp = 1;
  c.steps = 3;
  c.micro_batch_size = 2;
  c.seq_len = 32;
  c.seed = 7;
  c.lr = 3e-3;
  c.weight_decay = 0.1;
  c.verify = true;
  c.trace_steps = 3;
  c.dtype = "bf16";
  c.virtual_ranks = true;
  c.rank_speed = "1=0.5";
  c.pieces = {{"embed", "block0"}, {"block1", "head"}};
  c.stage_piece = {0, 1};
  return c;
}

TEST(RunConfig, TrainingWritesItsKeysInTheRecordedOrderAndOnlyTheGivenOptionalOnes) {
  EXPECT_EQ(
      Json(CudaTraining()).dump(),
      R"({"engine":"cuda","model":"tiny","architecture":{"layers":2,"hidden":64,"heads":4,)"
      R"("ffn_hidden":256,"vocab":512,"max_positions":128,"tied_embeddings":true},)"
      R"("schedule":"zb-h1","p":2,"v":1,"m":4,"pp":2,"dp":1,"steps":3,"micro_batch_size":2,)"
      R"("seq_len":32,"seed":7,"lr":0.003,"weight_decay":0.1,"verify":true,"trace_steps":3,)"
      R"("dtype":"bf16","virtual_ranks":true,"rank_speed":"1=0.5","pieces":[["embed","block0"],)"
      R"(["block1","head"]],"stage_piece":[0,1]})");
  TrainingConfig cpu = CudaTraining();
  cpu.engine = "cpu";
  cpu.virtual_ranks.reset();
  cpu.rank_speed.reset();
  const std::string text = Json(cpu).dump();
  EXPECT_EQ(text.find("virtual_ranks"), std::string::npos);
  EXPECT_EQ(text.find("rank_speed"), std::string::npos);
  EXPECT_EQ(text.find("microbatch_seqlens"), std::string::npos);
}

TEST(RunConfig, TimesSimulationWritesItsFixedNetworkAndUnevenWorkOnlyWhenUneven) {
  TimesSimulationConfig c;
  c.schedule = "1f1b";
  c.pp = 4;
  c.v = 1;
  c.m = 8;
  c.f_ms = 1;
  c.i_ms = 1.5;
  c.w_ms = 0.5;
  c.latency_us = 2;
  c.steps = 1;
  EXPECT_EQ(Json(c).dump(),
            R"({"command":"simulate","schedule":"1f1b","pp":4,"v":1,"m":8,"dp":1,"tp":1,)"
            R"("times_ms":{"F":1.0,"I":1.5,"W":0.5},"ideal_network":true,"latency_us":2.0,)"
            R"("steps":1})");
  UnevenWork work;
  EXPECT_FALSE(UnevenWorkRecordOf(work).has_value());  // even work records nothing
  work.rank_speed = {1.0, 0.5, 1.0, 1.0};
  work.microbatch_seqlens = {512, 1024, 512, 512, 512, 512, 512, 512};
  work.reference_seqlen = 512;
  work.attention_share = 0.25;
  c.uneven = UnevenWorkRecordOf(work);
  const std::string text = Json(c).dump();
  EXPECT_NE(text.find(R"("steps":1,"uneven":{"rank_speed":[1.0,0.5,1.0,1.0],)"
                      R"("microbatch_seqlens":[512,1024,512,512,512,512,512,512],"seq_len":512,)"
                      R"("attention_share":0.25}})"),
            std::string::npos)
      << text;
}

// Every family reads back what it wrote, byte for byte.
template <typename Config>
void ExpectRoundTrip(const Config& c) {
  const Json written = c;
  const Config back = written.get<Config>();
  EXPECT_EQ(Json(back).dump(), written.dump());
}

TEST(RunConfig, EveryFamilyReadsBackWhatItWrote) {
  ExpectRoundTrip(CudaTraining());
  SimulationConfig s;
  s.model = "gpt2-124m";
  s.cluster = "dgx-h100";
  s.nodes = 2;
  s.schedule = "interleaved-1f1b";
  s.pp = 4;
  s.dp = 4;
  s.tp = 1;
  s.v = 2;
  s.m = 8;
  s.micro_batch_size = 2;
  s.seq_len = 1024;
  s.dtype = "bf16";
  s.zero = 1;
  s.placement_order = "tp-dp-pp";
  s.topology = "fat-tree";
  s.recompute = true;
  s.ep = 2;
  s.alltoall_overlap = true;
  s.efficiency = 0.55;
  s.latency_us = 1.5;
  s.steps = 2;
  s.grad_reduce = "ring";
  s.grad_overlap = true;
  s.grad_bucket_params = 40000000;
  s.uneven = UnevenWorkConfig{{1.0, 0.8}, {}, 0, 0.0, "0-1=2"};
  ExpectRoundTrip(s);
  PredictionConfig p;
  p.measured = CudaTraining();
  p.simulated_steps = 3;
  p.costs_from = 12;
  p.prediction = {"cuda", "median",      4,    1,    1e-5, 2e-10, "run",
                  3e-6,   "calibration", 1e-4, 1e-9, true};
  ExpectRoundTrip(p);
}

TEST(RunConfig, APredictionIsTheMeasuredConfigurationWithEngineSimInItsPlaceThenHowItPredicted) {
  PredictionConfig p;
  // An older or foreign run's keys are kept as recorded: the prediction says what it predicts in
  // the measured run's own words.
  p.measured = Json::parse(R"({"engine":"cpu","model":"tiny","an_older_key":[1,2],"m":4})");
  p.simulated_steps = 2;
  p.costs_from = 5;
  p.prediction.costs_from_engine = "cpu";
  p.prediction.cost_statistic = "mean";
  p.prediction.messages_from = "none";
  p.prediction.instruction_overhead_from = "run";
  p.prediction.allreduce_alpha_s = -1;
  const Json written = p;
  EXPECT_EQ(written.dump(),
            R"({"engine":"sim","model":"tiny","an_older_key":[1,2],"m":4,"simulated_steps":2,)"
            R"("costs_from":5,"prediction":{"costs_from_engine":"cpu","cost_statistic":"mean",)"
            R"("calibration":0,"cores":0,"latency_s":0.0,"seconds_per_byte":0.0,)"
            R"("messages_from":"none","instruction_overhead_s":0.0,)"
            R"("instruction_overhead_from":"run","allreduce_alpha_s":-1.0,)"
            R"("allreduce_beta_s_per_byte":0.0}})");
  p.prediction.alone = true;
  EXPECT_NE(Json(p).dump().find(R"("allreduce_beta_s_per_byte":0.0,"costs":"alone"}})"),
            std::string::npos);
  const PredictionConfig back = written.get<PredictionConfig>();
  EXPECT_EQ(back.measured.dump(), R"({"engine":"sim","model":"tiny","an_older_key":[1,2],"m":4})");
  EXPECT_EQ(back.costs_from, 5);
  EXPECT_EQ(back.prediction.cost_statistic, "mean");
  EXPECT_FALSE(back.prediction.alone);
}

TEST(RecordedConfig, AValueOfTheWrongTypeIsAbsentAndTheRawValueStaysReadable) {
  const RecordedConfig c = ReadRunConfig(R"({"schedule":3,"m":4.5,"v":"2","pp":4,"dp":true})");
  EXPECT_TRUE(c.object);
  EXPECT_FALSE(c.schedule.has_value());
  EXPECT_FALSE(c.m.has_value());  // 4.5 microbatches is no count
  EXPECT_FALSE(c.v.has_value());
  EXPECT_FALSE(c.dp.has_value());
  EXPECT_EQ(c.pp, 4);
  ASSERT_NE(c.Find(RunKey::kM), nullptr);
  EXPECT_EQ(c.Find(RunKey::kM)->dump(), "4.5");
  EXPECT_EQ(c.Find(RunKey::kModel), nullptr);

  for (const char* text : {"[1,2]", "not json", "", "null"}) {
    const RecordedConfig none = ReadRunConfig(text);
    EXPECT_FALSE(none.object) << text;
    EXPECT_TRUE(none.json.is_object() && none.json.empty()) << text;
    EXPECT_EQ(none.Find(RunKey::kSchedule), nullptr) << text;
  }
}

TEST(RecordedConfig, UnevenWorkMergesSimulatesRecordWithATrainingRunsOptions) {
  EXPECT_TRUE(RecordedUnevenWork(ReadRunConfig(R"({"m":4})")).is_null());
  const RecordedConfig train =
      ReadRunConfig(R"({"engine":"cpu","rank_speed":"1=0.5","microbatch_seqlens":"8,16"})");
  EXPECT_EQ(RecordedUnevenWork(train).dump(),
            R"({"rank_speed":"1=0.5","microbatch_seqlens":"8,16"})");
  EXPECT_EQ(RecordedMicrobatchSeqlens(train).dump(), R"("8,16")");
  const RecordedConfig sim = ReadRunConfig(R"({"uneven":{"rank_speed":[1.0,0.5]}})");
  EXPECT_EQ(RecordedUnevenWork(sim).dump(), R"({"rank_speed":[1.0,0.5]})");
  EXPECT_TRUE(RecordedMicrobatchSeqlens(sim).is_null());
  ASSERT_TRUE(sim.uneven.has_value());
  EXPECT_EQ(sim.uneven->rank_speed, (std::vector<double>{1.0, 0.5}));
}

TEST(RecordedConfig, RemapsRunAndCalibrationReferencesAndKeepsOtherTextAsItWas) {
  const std::map<std::int64_t, std::int64_t> runs{{3, 13}}, calibrations{{1, 4}};
  EXPECT_EQ(RemapRunReferences(R"({"m":4,"costs_from":3,"prediction":{"calibration":1}})", runs,
                               calibrations),
            R"({"m":4,"costs_from":13,"prediction":{"calibration":4}})");
  // No reference to remap: the very same text, spacing included.
  for (const char* text : {R"({ "m" : 4 })", R"({"costs_from": 9})", "[1]", "{broken"}) {
    EXPECT_EQ(RemapRunReferences(text, runs, calibrations), text);
  }
}

// A version-1 database (the first schema) holding the configurations the first pipettes wrote:
// the current one migrates it and reads every run, and a key those pipettes did not write is
// absent (no architecture, no grad_reduce), never a made-up value.
TEST(RecordedConfig, ReadsTheConfigurationsOfAVersionOneDatabase) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("pipette_run_config_v1_" + std::to_string(::getpid()) + ".db"))
                               .string();
  std::filesystem::remove(path);
  { ASSERT_TRUE(ExperimentDb::Open(path, 1).ok()); }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  const char* insert =
      "INSERT INTO runs(engine, config, version, git_rev, libraries, host, started_at, status) "
      "VALUES "
      // simulate --times and simulate --model as 55d35da wrote them
      "('sim', '{\"command\":\"simulate\",\"schedule\":\"1f1b\",\"pp\":4,\"v\":1,\"m\":8,\"dp\":1,"
      "\"tp\":1,\"times_ms\":{\"F\":1.0,\"I\":1.0,\"W\":1.0},\"ideal_network\":true,"
      "\"latency_us\":0.0,\"steps\":1}', '0.1', 'r', '{}', 'h', '2026-11-22', 'ok'),"
      "('sim', '{\"command\":\"simulate\",\"model\":\"gpt2-124m\",\"cluster\":\"dgx-h100\","
      "\"nodes\":1,\"schedule\":\"1f1b\",\"pp\":2,\"dp\":1,\"tp\":1,\"v\":1,\"m\":4,"
      "\"micro_batch_size\":1,\"seq_len\":1024,\"dtype\":\"bf16\",\"zero\":0,\"recompute\":false,"
      "\"efficiency\":0.5,\"ideal_network\":false,\"latency_us\":0.0,\"steps\":1}', '0.1', 'r', "
      "'{}', 'h', '2026-11-22', 'ok'),"
      // pipette train as 0c8ebd5 wrote it
      "('cpu', '{\"engine\":\"cpu\",\"model\":\"tiny\",\"schedule\":\"1f1b\",\"p\":2,\"v\":1,"
      "\"m\":4,\"pp\":2,\"dp\":1,\"steps\":2,\"micro_batch_size\":1,\"seq_len\":16,\"seed\":1,"
      "\"lr\":0.003,\"weight_decay\":0.1,\"verify\":false,\"dtype\":\"fp32\",\"pieces\":[],"
      "\"stage_piece\":[0,1]}', '0.1', 'r', '{}', 'h', '2026-11-22', 'ok')";
  ASSERT_EQ(sqlite3_exec(raw, insert, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(raw);
  sqlite3_close(raw);

  Result<ExperimentDb> db = ExperimentDb::Open(path);  // migrates to the current schema
  ASSERT_TRUE(db.ok()) << db.status().message();
  Result<RunData> times = db->LoadRun(1), model = db->LoadRun(2), train = db->LoadRun(3);
  ASSERT_TRUE(times.ok() && model.ok() && train.ok());

  const RecordedConfig t = ReadRunConfig(times->run.config);
  EXPECT_EQ(t.schedule, "1f1b");
  EXPECT_EQ(t.pp, 4);
  EXPECT_EQ(t.m, 8);
  EXPECT_FALSE(t.model.has_value());
  EXPECT_FALSE(t.p.has_value());
  EXPECT_EQ(t.ideal_network, true);
  EXPECT_EQ(Json(ReadRunConfig(times->run.config).json.get<TimesSimulationConfig>()).dump(),
            times->run.config);  // the current writer writes what the first one wrote

  const SimulationConfig s = ReadRunConfig(model->run.config).json.get<SimulationConfig>();
  EXPECT_EQ(s.model, "gpt2-124m");
  EXPECT_EQ(s.seq_len, 1024);
  EXPECT_EQ(s.efficiency, 0.5);
  EXPECT_EQ(s.ep, 1);  // not recorded then: the struct's default, one expert-parallel GPU
  EXPECT_EQ(s.grad_reduce, "");

  const RecordedConfig r = ReadRunConfig(train->run.config);
  EXPECT_EQ(r.p, 2);
  EXPECT_EQ(r.seq_len, 16);
  EXPECT_EQ(r.Find(RunKey::kTp), nullptr);
  const TrainingConfig tc = r.json.get<TrainingConfig>();
  EXPECT_FALSE(tc.architecture.has_value());
  EXPECT_FALSE(tc.virtual_ranks.has_value());
  EXPECT_EQ(tc.stage_piece, (std::vector<int>{0, 1}));
  const std::string rewritten = Json(tc).dump();
  EXPECT_EQ(rewritten.find("architecture"), std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pipette
