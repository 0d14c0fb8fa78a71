// check(): converts a PJRT_Error into a PjrtError exception and frees it.
#include "error.h"

namespace torch_pjrt::runtime {

void check(const PJRT_Api* api, PJRT_Error* error, const char* what) {
  if (error == nullptr) return;
  PJRT_Error_Message_Args message{};
  message.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  message.error = error;
  api->PJRT_Error_Message(&message);
  std::string text(message.message, message.message_size);

  PJRT_Error_GetCode_Args code{};
  code.struct_size = PJRT_Error_GetCode_Args_STRUCT_SIZE;
  code.error = error;
  // GetCode reporting an error of its own is not worth a second exception; keep UNKNOWN.
  code.code = PJRT_Error_Code_UNKNOWN;
  if (PJRT_Error* code_error = api->PJRT_Error_GetCode(&code)) {
    PJRT_Error_Destroy_Args destroy{};
    destroy.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
    destroy.error = code_error;
    api->PJRT_Error_Destroy(&destroy);
  }

  PJRT_Error_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  destroy.error = error;
  api->PJRT_Error_Destroy(&destroy);
  throw PjrtError(std::string(what) + ": " + text, code.code);
}

}  // namespace torch_pjrt::runtime
