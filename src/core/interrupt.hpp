#pragma once
// A process-wide "stop soon" flag. main() installs a SIGINT/SIGTERM handler that sets it;
// scenarios poll it between repetitions and tests, record what they measured as
// "interrupted", and return normally so results already measured reach the disk.
namespace sb {

bool interrupt_requested();
void request_interrupt();  // async-signal-safe
void clear_interrupt();
// Installs SIGINT and SIGTERM handlers that call request_interrupt(); a second signal of the
// same kind falls back to the default action.
void install_interrupt_handlers();

}  // namespace sb
