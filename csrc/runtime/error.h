// Turns PJRT_Error values into C++ exceptions that carry the plugin's message.
#pragma once

#include <pjrt_c_api.h>

#include <stdexcept>
#include <string>

namespace torch_pjrt::runtime {

class PjrtError : public std::runtime_error {
 public:
  PjrtError(const std::string& message, PJRT_Error_Code code)
      : std::runtime_error(message), code_(code) {}
  PJRT_Error_Code code() const { return code_; }

 private:
  PJRT_Error_Code code_;
};

// If `error` is non-null: reads its message and code, destroys it and throws PjrtError whose
// message is "<what>: <plugin message>". Does nothing for nullptr.
void check(const PJRT_Api* api, PJRT_Error* error, const char* what);

}  // namespace torch_pjrt::runtime
