// PJRT key-value callbacks over a KeyValueStore.
#include "kv_store.h"

#include <cstring>
#include <exception>

namespace torch_pjrt::runtime {
namespace {

PJRT_Error* report(PJRT_CallbackError* callback_error, PJRT_Error_Code code,
                   const std::string& message) {
  if (callback_error == nullptr || *callback_error == nullptr) return nullptr;
  return (*callback_error)(code, message.data(), message.size());
}

void free_value(char* value) { delete[] value; }

// Hands `value` to the plugin in a buffer it frees through free_value.
template <typename Args>
void hand_out(Args* args, const std::string& value) {
  char* copy = new char[value.size() + 1];
  std::memcpy(copy, value.data(), value.size());
  args->value = copy;
  args->value_size = value.size();
  args->value_deleter_callback = free_value;
}

// Runs `body`, turning exceptions into the plugin's PJRT errors.
template <typename Body>
PJRT_Error* guarded(PJRT_CallbackError* callback_error, const char* what, Body body) {
  try {
    body();
    return nullptr;
  } catch (const KeyValueTimeout& e) {
    return report(callback_error, PJRT_Error_Code_DEADLINE_EXCEEDED,
                  std::string(what) + ": " + e.what());
  } catch (const std::exception& e) {
    return report(callback_error, PJRT_Error_Code_INTERNAL, std::string(what) + ": " + e.what());
  }
}

PJRT_Error* kv_get(PJRT_KeyValueGetCallback_Args* args) {
  auto* store = static_cast<KeyValueStore*>(args->user_arg);
  return guarded(args->callback_error, "key-value get", [&] {
    hand_out(args, store->get(std::string(args->key, args->key_size),
                              std::chrono::milliseconds(args->timeout_in_ms)));
  });
}

PJRT_Error* kv_try_get(PJRT_KeyValueTryGetCallback_Args* args) {
  auto* store = static_cast<KeyValueStore*>(args->user_arg);
  const std::string key(args->key, args->key_size);
  std::optional<std::string> value;
  PJRT_Error* error =
      guarded(args->callback_error, "key-value try_get", [&] { value = store->try_get(key); });
  if (error != nullptr) return error;
  if (!value) {
    return report(args->callback_error, PJRT_Error_Code_NOT_FOUND, "key not found: " + key);
  }
  hand_out(args, *value);
  return nullptr;
}

PJRT_Error* kv_put(PJRT_KeyValuePutCallback_Args* args) {
  auto* store = static_cast<KeyValueStore*>(args->user_arg);
  return guarded(args->callback_error, "key-value put", [&] {
    store->put(std::string(args->key, args->key_size), std::string(args->value, args->value_size));
  });
}

}  // namespace

void install_kv_callbacks(PJRT_Client_Create_Args& args, KeyValueStore* store) {
  args.kv_get_callback = kv_get;
  args.kv_get_user_arg = store;
  args.kv_try_get_callback = kv_try_get;
  args.kv_try_get_user_arg = store;
  args.kv_put_callback = kv_put;
  args.kv_put_user_arg = store;
}

}  // namespace torch_pjrt::runtime
