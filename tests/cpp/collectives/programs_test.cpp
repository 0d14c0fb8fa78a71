// The device transport's collective programs, run by one process driving several CPU devices: each
// program is compiled with a device assignment and launched once on all of them (one argument
// list per device), as each process launches it on its own device in a multi-process job.
#include "collectives/programs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "runtime/buffer.h"
#include "runtime/client.h"
#include "runtime/executable.h"
#include "test_plugin.h"

namespace torch_pjrt::collectives {
namespace {

using runtime::Buffer;
using runtime::Client;

std::shared_ptr<Client> client4() {
  static auto client =
      Client::create(runtime::Plugin::load(test_plugin_path()), {{"cpu_device_count", int64_t{4}}});
  return client;
}

// Runs `spec` on client devices `devices` (replica r on devices[r]); inputs[r] are replica r's
// arguments. Returns each replica's first output as raw bytes.
std::vector<std::vector<char>> run(
    const Spec& spec, const std::vector<int>& devices,
    const std::vector<std::vector<std::shared_ptr<Buffer>>>& inputs) {
  Client& client = *client4();
  runtime::CompileOptions options;
  for (int d : devices) options.replica_devices.push_back(client.device_id(d));
  auto exe = client.compile(program(spec), options);
  const std::vector<int> local = exe->addressable_devices();
  EXPECT_EQ(local.size(), devices.size());
  std::vector<std::vector<const Buffer*>> args;
  std::vector<int> replica_of;
  for (int d : local) {
    int r = 0;
    while (devices[r] != d) ++r;
    replica_of.push_back(r);
    std::vector<const Buffer*> list;
    for (const auto& b : inputs[r]) list.push_back(b.get());
    args.push_back(list);
  }
  auto outputs = exe->execute_replicated(args);
  std::vector<std::vector<char>> result(devices.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Buffer& out = *outputs[i][0];
    result[replica_of[i]].resize(out.byte_size());
    out.to_host(result[replica_of[i]].data(), out.byte_size());
  }
  return result;
}

template <typename T>
std::shared_ptr<Buffer> upload(const std::vector<T>& values, runtime::ElementType type,
                               int device) {
  return client4()->buffer_from_host(values.data(), type, {static_cast<int64_t>(values.size())},
                                     device);
}

std::shared_ptr<Buffer> rank_buffer(int32_t rank, int device) {
  return client4()->buffer_from_host(&rank, runtime::ElementType::I32, {}, device);
}

template <typename T>
std::vector<T> as(const std::vector<char>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

const std::vector<int> kAll{0, 1, 2, 3};

Spec make(Kind kind, runtime::ElementType type, int64_t count, int size,
          Reduce reduce = Reduce::kSum, int root = 0) {
  Spec s;
  s.kind = kind;
  s.type = type;
  s.count = count;
  s.group_size = size;
  s.reduce = reduce;
  s.root = root;
  return s;
}

// Replica r holds {r + 1, 2 * (r + 1), -(r + 1)}.
std::vector<std::vector<std::shared_ptr<Buffer>>> f32_inputs(const std::vector<int>& devices) {
  std::vector<std::vector<std::shared_ptr<Buffer>>> in;
  for (size_t r = 0; r < devices.size(); ++r) {
    const float v = static_cast<float>(r + 1);
    in.push_back({upload<float>({v, 2 * v, -v}, runtime::ElementType::F32, devices[r])});
  }
  return in;
}

TEST(CollectivePrograms, AllReduceFloatReductions) {
  const struct {
    Reduce reduce;
    std::vector<float> expected;
  } cases[] = {
      {Reduce::kSum, {10, 20, -10}}, {Reduce::kProduct, {24, 384, 24}}, {Reduce::kMin, {1, 2, -4}},
      {Reduce::kMax, {4, 8, -1}},    {Reduce::kAvg, {2.5f, 5, -2.5f}},
  };
  for (const auto& c : cases) {
    Spec spec = make(Kind::kAllReduce, runtime::ElementType::F32, 3, 4, c.reduce);
    auto out = run(spec, kAll, f32_inputs(kAll));
    for (int r = 0; r < 4; ++r) EXPECT_EQ(as<float>(out[r]), c.expected) << reduce_name(c.reduce);
  }
}

TEST(CollectivePrograms, PremulSumMultipliesByEachRanksFactor) {
  Spec spec = make(Kind::kAllReduce, runtime::ElementType::F32, 3, 4, Reduce::kPremulSum);
  auto in = f32_inputs(kAll);
  for (int r = 0; r < 4; ++r) {
    const float factor = 0.5f;
    in[r].push_back(client4()->buffer_from_host(&factor, runtime::ElementType::F32, {}, r));
  }
  auto out = run(spec, kAll, in);
  EXPECT_EQ(as<float>(out[2]), (std::vector<float>{5, 10, -5}));
}

TEST(CollectivePrograms, IntegerAndBoolReductions) {
  auto ints = [](const std::vector<int>& devices) {
    std::vector<std::vector<std::shared_ptr<Buffer>>> in;
    for (size_t r = 0; r < devices.size(); ++r) {
      const int32_t v = static_cast<int32_t>(r) + 1;  // 1, 2, 3, 4
      in.push_back({upload<int32_t>({v, 7 * v, -v}, runtime::ElementType::I32, devices[r])});
    }
    return in;
  };
  const struct {
    Reduce reduce;
    std::vector<int32_t> expected;
  } cases[] = {
      {Reduce::kBand, {1 & 2 & 3 & 4, 7 & 14 & 21 & 28, -1 & -2 & -3 & -4}},
      {Reduce::kBor, {1 | 2 | 3 | 4, 7 | 14 | 21 | 28, -1 | -2 | -3 | -4}},
      {Reduce::kBxor, {1 ^ 2 ^ 3 ^ 4, 7 ^ 14 ^ 21 ^ 28, -1 ^ -2 ^ -3 ^ -4}},
      {Reduce::kAvg, {2, 17, -2}},  // 10/4, 70/4, -10/4 truncated as integer division does
  };
  for (const auto& c : cases) {
    Spec spec = make(Kind::kAllReduce, runtime::ElementType::I32, 3, 4, c.reduce);
    EXPECT_EQ(as<int32_t>(run(spec, kAll, ints(kAll))[1]), c.expected) << reduce_name(c.reduce);
  }
  // Bool: SUM is OR, PRODUCT is AND (as NCCL does).
  std::vector<std::vector<std::shared_ptr<Buffer>>> flags;
  for (int r = 0; r < 4; ++r) {
    flags.push_back({upload<uint8_t>({r == 2, 1, 0}, runtime::ElementType::Bool, r)});
  }
  Spec any = make(Kind::kAllReduce, runtime::ElementType::Bool, 3, 4, Reduce::kSum);
  EXPECT_EQ(as<uint8_t>(run(any, kAll, flags)[0]), (std::vector<uint8_t>{1, 1, 0}));
  Spec all = make(Kind::kAllReduce, runtime::ElementType::Bool, 3, 4, Reduce::kProduct);
  EXPECT_EQ(as<uint8_t>(run(all, kAll, flags)[3]), (std::vector<uint8_t>{0, 1, 0}));
}

TEST(CollectivePrograms, BroadcastIsBitExact) {
  // Root 2's values include -0.0 and a NaN with a payload, which a sum of zeros would change.
  const uint32_t nan_payload = 0x7fc01234u;
  float nan;
  std::memcpy(&nan, &nan_payload, sizeof nan);
  std::vector<std::vector<std::shared_ptr<Buffer>>> in;
  for (int r = 0; r < 4; ++r) {
    const std::vector<float> v =
        r == 2 ? std::vector<float>{-0.0f, nan, 3.5f} : std::vector<float>{1.0f * r, 2, 3};
    in.push_back({upload<float>(v, runtime::ElementType::F32, r), rank_buffer(r, r)});
  }
  Spec spec = make(Kind::kBroadcast, runtime::ElementType::F32, 3, 4, Reduce::kSum, 2);
  auto out = run(spec, kAll, in);
  for (int r = 0; r < 4; ++r) {
    auto bits = as<uint32_t>(out[r]);
    EXPECT_EQ(bits[0], 0x80000000u);
    EXPECT_EQ(bits[1], nan_payload);
    EXPECT_EQ(as<float>(out[r])[2], 3.5f);
  }
}

TEST(CollectivePrograms, ReduceLeavesNonRootsUnchanged) {
  auto in = f32_inputs(kAll);
  for (int r = 0; r < 4; ++r) in[r].push_back(rank_buffer(r, r));
  Spec spec = make(Kind::kReduce, runtime::ElementType::F32, 3, 4, Reduce::kMax, 1);
  auto out = run(spec, kAll, in);
  EXPECT_EQ(as<float>(out[1]), (std::vector<float>{4, 8, -1}));
  EXPECT_EQ(as<float>(out[3]), (std::vector<float>{4, 8, -4}));
}

TEST(CollectivePrograms, GatherScatterAndAllToAll) {
  std::vector<std::vector<std::shared_ptr<Buffer>>> in;
  for (int r = 0; r < 4; ++r) {
    in.push_back({upload<int64_t>({10 * r, 10 * r + 1}, runtime::ElementType::I64, r)});
  }
  Spec gather = make(Kind::kAllGather, runtime::ElementType::I64, 2, 4);
  EXPECT_EQ(as<int64_t>(run(gather, kAll, in)[3]),
            (std::vector<int64_t>{0, 1, 10, 11, 20, 21, 30, 31}));

  // Reduce-scatter: replica r holds 0..7 times (r + 1); chunk k of the sum is 10 * {2k, 2k + 1}.
  std::vector<std::vector<std::shared_ptr<Buffer>>> wide;
  for (int r = 0; r < 4; ++r) {
    std::vector<float> v;
    for (int i = 0; i < 8; ++i) v.push_back(static_cast<float>(i * (r + 1)));
    wide.push_back({upload<float>(v, runtime::ElementType::F32, r)});
  }
  Spec rs = make(Kind::kReduceScatter, runtime::ElementType::F32, 2, 4, Reduce::kSum);
  auto scattered = run(rs, kAll, wide);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(as<float>(scattered[r]), (std::vector<float>{20.0f * r, 20.0f * r + 10}));
  }

  // Scatter from root 3: replica r receives root's chunk r.
  for (int r = 0; r < 4; ++r) wide[r].push_back(rank_buffer(r, r));
  Spec sc = make(Kind::kScatter, runtime::ElementType::F32, 2, 4, Reduce::kSum, 3);
  auto chunks = run(sc, kAll, wide);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(as<float>(chunks[r]), (std::vector<float>{8.0f * r, 8.0f * r + 4}));
  }

  // All-to-all: replica r sends {100 r + j} to replica j.
  std::vector<std::vector<std::shared_ptr<Buffer>>> a2a;
  for (int r = 0; r < 4; ++r) {
    a2a.push_back({upload<int32_t>({100 * r, 100 * r + 1, 100 * r + 2, 100 * r + 3},
                                   runtime::ElementType::I32, r)});
  }
  Spec all_to_all = make(Kind::kAllToAll, runtime::ElementType::I32, 1, 4);
  EXPECT_EQ(as<int32_t>(run(all_to_all, kAll, a2a)[2]), (std::vector<int32_t>{2, 102, 202, 302}));
}

TEST(CollectivePrograms, SubgroupOnAnyDevicesAndPermute) {
  // A 2-rank group on devices 3 and 1 (rank 0 on device 3).
  const std::vector<int> pair{3, 1};
  Spec sum = make(Kind::kAllReduce, runtime::ElementType::F32, 3, 2, Reduce::kSum);
  EXPECT_EQ(as<float>(run(sum, pair, f32_inputs(pair))[1]), (std::vector<float>{3, 6, -3}));

  // Rank 0 sends three floats to rank 1 while rank 1 sends two ints to rank 0, in one program.
  Spec p2p = make(Kind::kPermute, runtime::ElementType::F32, 0, 2);
  p2p.transfers = {{runtime::ElementType::F32, 3, 0, 1}, {runtime::ElementType::I32, 2, 1, 0}};
  std::vector<std::vector<std::shared_ptr<Buffer>>> in{
      {upload<float>({1.5f, 2.5f, 3.5f}, runtime::ElementType::F32, 3),
       upload<int32_t>({0, 0}, runtime::ElementType::I32, 3)},
      {upload<float>({0, 0, 0}, runtime::ElementType::F32, 1),
       upload<int32_t>({7, -7}, runtime::ElementType::I32, 1)},
  };
  Client& client = *client4();
  runtime::CompileOptions options;
  options.replica_devices = {client.device_id(3), client.device_id(1)};
  auto exe = client.compile(program(p2p), options);
  const std::vector<int> local = exe->addressable_devices();
  std::vector<std::vector<const Buffer*>> args;
  for (int d : local) {
    const auto& list = in[d == 3 ? 0 : 1];
    args.push_back({list[0].get(), list[1].get()});
  }
  auto out = exe->execute_replicated(args);
  for (size_t i = 0; i < local.size(); ++i) {
    std::vector<float> f(3);
    std::vector<int32_t> n(2);
    out[i][0]->to_host(f.data(), sizeof(float) * 3);
    out[i][1]->to_host(n.data(), sizeof(int32_t) * 2);
    if (local[i] == 1) {
      EXPECT_EQ(f, (std::vector<float>{1.5f, 2.5f, 3.5f}));
    } else {
      EXPECT_EQ(n, (std::vector<int32_t>{7, -7}));
    }
  }
}

TEST(CollectivePrograms, InvalidSpecsNameTheCollective) {
  auto message = [](const Spec& spec) {
    try {
      program(spec);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message(make(Kind::kAllReduce, runtime::ElementType::F32, 3, 2, Reduce::kBand)),
            "all_reduce: ReduceOp.BAND is not defined for f32 tensors");
  EXPECT_EQ(
      message(make(Kind::kReduceScatter, runtime::ElementType::I32, 3, 2, Reduce::kPremulSum)),
      "reduce_scatter: ReduceOp.PREMUL_SUM needs a floating-point tensor, got i32");
  EXPECT_EQ(message(make(Kind::kBroadcast, runtime::ElementType::F32, 3, 2, Reduce::kSum, 2)),
            "broadcast: root 2 is outside the group of 2");
  EXPECT_EQ(message(make(Kind::kAllReduce, runtime::ElementType::Bool, 3, 2, Reduce::kAvg)),
            "all_reduce: cannot use ReduceOp.AVG with boolean inputs");
  // Distinct programs have distinct keys.
  EXPECT_NE(key(make(Kind::kAllReduce, runtime::ElementType::F32, 3, 2)),
            key(make(Kind::kAllReduce, runtime::ElementType::F32, 3, 4)));
}

}  // namespace
}  // namespace torch_pjrt::collectives
