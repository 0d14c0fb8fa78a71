// The eager programs' disk cache (program_disk_cache.h).
#include "runtime/program_disk_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include "runtime/metrics.h"

namespace torch_pjrt::runtime {
namespace {

constexpr char kMagic[] = "TORCH_PJRT_EAGER1";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string cache_root() {
  std::string dir = env("TORCH_PJRT_CACHE_DIR");
  if (!dir.empty()) return dir == "off" || dir == "0" || dir == "none" ? "" : dir;
  std::string base = env("XDG_CACHE_HOME");
  if (base.empty()) {
    const std::string home = env("HOME");
    if (home.empty()) return "";
    base = home + "/.cache";
  }
  return base + "/torch_pjrt";
}

uint64_t max_bytes() {
  const std::string mb = env("TORCH_PJRT_CACHE_MAX_MB");
  double value = 2048;
  if (!mb.empty()) {
    char* end = nullptr;
    const double parsed = std::strtod(mb.c_str(), &end);
    if (end != mb.c_str() && parsed >= 0) value = parsed;
  }
  return static_cast<uint64_t>(value * (1 << 20));
}

// Deletes the least recently written files (a load rewrites its file's time) until the folder's
// cache files total at most `limit` bytes.
void evict(const std::string& dir, uint64_t limit) {
  namespace fs = std::filesystem;
  struct Entry {
    fs::path path;
    uint64_t size;
    fs::file_time_type time;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code error;
  for (const auto& item : fs::directory_iterator(dir, error)) {
    if (item.path().extension() != ".bin") continue;
    std::error_code ignored;
    const uint64_t size = item.file_size(ignored);
    const auto time = item.last_write_time(ignored);
    if (ignored) continue;  // deleted meanwhile
    entries.push_back({item.path(), size, time});
    total += size;
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.time < b.time; });
  for (const Entry& e : entries) {
    if (total <= limit) break;
    std::error_code ignored;
    fs::remove(e.path, ignored);
    total -= e.size;
  }
}

uint64_t fnv1a(const std::string& a, const std::string& b) {
  uint64_t h = 1469598103934665603ull;
  for (const std::string* s : {&a, &b}) {
    for (unsigned char c : *s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // separator
  }
  return h;
}

void put(std::string& out, const std::string& field) {
  const uint64_t n = field.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof n);
  out += field;
}

bool take(const std::string& in, size_t& pos, std::string& field) {
  uint64_t n = 0;
  if (in.size() - pos < sizeof n) return false;
  std::memcpy(&n, in.data() + pos, sizeof n);
  pos += sizeof n;
  if (in.size() - pos < n) return false;
  field.assign(in, pos, n);
  pos += n;
  return true;
}

}  // namespace

ProgramDiskCache ProgramDiskCache::from_environment(const Client& client,
                                                    const std::string& options_key) {
  ProgramDiskCache c;
  if (env("TORCH_PJRT_EAGER_DISK_CACHE") != "1") return c;
  const std::string root = cache_root();
  if (root.empty()) return c;
  c.dir_ = root + "/eager";
  c.identity_ = client.plugin().path() + '\0' + client.platform_version() + '\0' + options_key;
  c.max_bytes_ = max_bytes();
  return c;
}

std::string ProgramDiskCache::path_for(const std::string& text) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bin",
                static_cast<unsigned long long>(fnv1a(identity_, text)));
  return dir_ + "/" + name;
}

std::shared_ptr<Executable> ProgramDiskCache::load(Client& client, const std::string& text,
                                                   const CompileOptions& options) const {
  const std::string path = path_for(text);
  std::ifstream file(path, std::ios::binary);
  if (!file) return nullptr;
  std::stringstream data;
  data << file.rdbuf();
  const std::string in = data.str();
  size_t pos = 0;
  std::string magic, identity, stored_text, payload;
  const bool complete = take(in, pos, magic) && take(in, pos, identity) &&
                        take(in, pos, stored_text) && take(in, pos, payload) && pos == in.size();
  if (!complete || magic != kMagic) {  // truncated or damaged
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    return nullptr;
  }
  if (identity != identity_ || stored_text != text) return nullptr;  // another program
  try {
    auto executable = client.deserialize(payload, options);
    counters().disk_hits++;
    std::error_code ignored;  // marks the file used, for the size cap
    std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ignored);
    return executable;
  } catch (const std::exception&) {  // the plugin rejects it: from another build
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    return nullptr;
  }
}

bool ProgramDiskCache::store(const std::string& text, const Executable& executable) const {
  std::string payload;
  try {
    payload = executable.serialize();
  } catch (const std::exception&) {
    return false;
  }
  std::string out;
  put(out, kMagic);
  put(out, identity_);
  put(out, text);
  put(out, payload);
  std::error_code error;
  std::filesystem::create_directories(dir_, error);
  if (error) return false;
  const std::string path = path_for(text);
  const std::string temporary = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file.write(out.data(), static_cast<std::streamsize>(out.size()))) return false;
  }
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    return false;
  }
  evict(dir_, max_bytes_);
  return true;
}

}  // namespace torch_pjrt::runtime
