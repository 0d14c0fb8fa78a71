// Test-only fault injection: arm_fault("execute", 2) makes the second plugin execute from now on
// fail as a plugin error does (PjrtError), so tests can check that each kind of failure raises a
// clean exception and loses nothing else. Sites: compile, execute, to_host, from_host, and
// allocate: the nth call that allocates device memory (an execute or a from_host) fails as the
// device running out of it (PJRT_Error_Code_RESOURCE_EXHAUSTED).
#pragma once

#include <cstdint>
#include <string>

namespace torch_pjrt::runtime {

// Arms one fault: the nth call (1 = the next) at `site` fails. std::invalid_argument for an
// unknown site or nth < 1.
void arm_fault(const std::string& site, int64_t nth);
// Called by the runtime before each plugin call at `site`: throws PjrtError when an armed fault
// falls due (then disarmed). One relaxed atomic load when nothing is armed.
void inject_fault(const char* site);

}  // namespace torch_pjrt::runtime
