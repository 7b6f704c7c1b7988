#pragma once
// A process-wide "stop soon" flag. main() installs a SIGINT/SIGTERM/SIGHUP handler that sets it;
// scenarios poll it between repetitions and tests, record what they measured as
// "interrupted", and return normally so results already measured reach the disk.
namespace sb {

bool interrupt_requested();
void request_interrupt();  // async-signal-safe
void clear_interrupt();
// How many SIGINT/SIGTERM/SIGHUP signals have come (request_interrupt() counts as one).
int interrupt_count();
// Installs SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh session) handlers that call
// request_interrupt(): what was measured is kept and the children are stopped. A second signal
// removes the temporaries of unfinished outputs (core/file_io.hpp) and ends the process the
// default way, unless the second signal is deferred at that moment: then it is only counted, for
// the stage watchdog (core/watchdog.hpp) to end the run keeping what was measured.
void install_interrupt_handlers();
void defer_second_interrupt(bool deferred);

}  // namespace sb
