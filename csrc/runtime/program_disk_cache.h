// An on-disk cache of compiled eager programs, so a restarted process (a server, a training job)
// loads the executables it compiled before instead of compiling them again. Off unless
// TORCH_PJRT_EAGER_DISK_CACHE=1 (the vLLM platform turns it on); the directory is
// TORCH_PJRT_CACHE_DIR's (or $XDG_CACHE_HOME/torch_pjrt, ~/.cache/torch_pjrt), subfolder "eager".
//
// A file holds the program's identity (plugin path and platform version, compile options), its
// StableHLO text and the plugin's serialized executable; a load compares identity and text
// exactly, so a hash collision, another plugin or another build is a miss, never a wrong program.
// Files are written under a temporary name and renamed; a file that does not load is deleted.
// The folder is capped at TORCH_PJRT_CACHE_MAX_MB (default 2048, as torch.compile's cache): a
// store deletes the least recently used files past it, and a load marks its file used.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/client.h"
#include "runtime/executable.h"

namespace torch_pjrt::runtime {

class ProgramDiskCache {
 public:
  // The cache as the environment sets it now (disabled when it is off or has no directory).
  static ProgramDiskCache from_environment(const Client& client, const std::string& options_key);

  bool enabled() const { return !dir_.empty(); }
  // The executable stored for `text`, or null (absent, unreadable, or from another build).
  std::shared_ptr<Executable> load(Client& client, const std::string& text,
                                   const CompileOptions& options) const;
  // Stores `executable` for `text`; false when the plugin cannot serialize or the write fails.
  bool store(const std::string& text, const Executable& executable) const;

 private:
  std::string path_for(const std::string& text) const;

  std::string dir_;       // empty: disabled
  std::string identity_;  // plugin, platform version, options
  uint64_t max_bytes_ = 0;
};

}  // namespace torch_pjrt::runtime
