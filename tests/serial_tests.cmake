# Which integration tests run alone (RUN_SERIAL): ctest -j starts one only when no other test
# runs, and starts nothing beside it. Every other test of sb_integration_test runs beside other
# tests, as the unit tests do: most of the binary's time is waiting (ssh round trips, process
# starts, a peer's deadline, gzip, chromium, PostgreSQL), which another test's CPU load does not
# break.
#
# The rule: a test runs alone when one of its assertions holds only on an otherwise idle
# machine:
#   - it compares measured times or rates (a ratio, "slower", the largest part of a gap), counts
#     stalls or throughput drops, or checks a reading against a fixed timing tolerance;
#   - it bounds wall time under 60 s for work that takes a real share of the bound (a deadline
#     such as --timeout 3s that a round must beat, EXPECT_LT(seconds_since(start), 20) around a
#     signal's answer, wait_exit(pid, 10) for a process to end).
# Lower bounds (a duration >= the server's planted 60 ms), causal order (prefill + transfer <=
# TTFT) and values recomputed from the document's own samples hold under any load: those tests
# run beside others. When in doubt, alone.
#
# A regular expression per line, matched against the test's full name (Suite.Name); a suite
# whose every test times something is named as a whole. CTest reads this file after
# sb_integration_test's discovered tests (tests/CMakeLists.txt appends it to TEST_INCLUDE_FILES),
# on every ctest run: an edit needs no cmake. A line that matches no test is reported (a renamed
# test would otherwise lose its RUN_SERIAL without a word).
set(_sb_serial_tests
  # Measured times and rates compared, stalls and drops counted, timing tolerances.
  "^Decompose\\.RpcStagesSplitIntoComputeConversionCommunicationCopiesHost$"  # client and server timings
  "^Run\\.AStalledProcessIsCountedWarnedAndLeavesTheRobustRateAlone$"  # one stall counted, no other
  "^Run\\.AdaptiveRepetitionsStopAtTheTargetOrTheCap$"         # a CI target met within 20 repetitions
  "^CompareGates\\.RealRunsOfAModelAndOneEightTimesDeeper$"    # measured rates' ratio beyond 2
  "^Explain\\.NamesTheMicroBatchAsTheLargestPartOfThePrefillGap$"  # the largest measured part
  "^Sustained\\."                                              # drops, onsets, a loaded phase's ratio
  "^Gpu\\."                                                    # lavapipe runs and servers under deadlines
  "^TelemetryRun\\.StageEnergyMatchesTheCounterWriter$"        # a writer thread against the sampler
  "^TelemetryRun\\.BatteryDrainFromTheChargeCounterThroughRunSustainedAndCompare$"  # a clocked counter
  "^ServeMeasure\\.DurationPerPoint$"                          # requests sent in a 0.5 s window
  # Wall-time bounds and deadlines under 60 s on work that takes a share of them.
  "^Signals\\."                                                # answered within 20 s, gone within 10 s
  "^Faults\\.FifosAsInputsAreRefusedAtOnce$"                   # 30 s per command
  "^Faults\\.CtrlCEndsAWaitOnATricklingServer$"                # < 10 s
  "^Faults\\.RpcServerRefusesWhatItCannotServe$"               # 30 s per command
  "^Faults\\.ASensorCommandThatHangsOrFloodsCostsItsDeadlineOnly$"  # < 30 s
  "^Faults\\.CtrlCBeforeTheFirstServePointKeepsTheDocument$"   # < 10 s
  "^Faults\\.RpcRepliesFuzz$"                                  # < 45 s
  "^Faults\\.CtrlCDuringFidelityKeepsWhatWasMeasuredMarkedInterrupted$"  # < 30 s
  "^FaultsInputs\\.CtrlCEndsTheWaitForALockedStore$"           # < 5 s
  "^FaultsInputs\\.SynthInputsThatAreNotConfigsAreOneLine$"    # 20 s per command
  "^FaultsInputs\\.SynthStopsOnSignalsAndLeavesNoTemporary$"   # < 5 s
  "^FaultsInputs\\.ImportStopsOnSignals$"                      # < 5 s
  "^Http\\.TricklingAnswerToDiscoveryIsCutOff$"                # < 15 s
  "^Http\\.FaultsAreCleanErrorsAndTheRunGoesOn$"               # < 20 s
  "^Http\\.OllamaNdjsonFaultsAreCleanErrorsAndTheRunGoesOn$"   # < 20 s
  "^Rpc\\.AServerThatStopsAnsweringMidRunEndsAtTheStageTimeout$"  # --stage-timeout 3
  "^Rpc\\.CtrlCEndsARunWaitingOnAServerThatStoppedAnswering$"  # < 30 s
  "^Rpc\\.ABrokenConnectionToALiveServerIsRecordedAsSuch$"     # ends within 30 s
  "^Rpc\\.AServerThatAcceptsAndNeverAnswersIsBadInput$"        # < 30 s
  "^Rpc\\.AServerThatAnswersTheHelloAndThenStopsIsBadInput$"   # < 25 s
  "^Fleet\\.TimeoutInterruptsTheCommandThereAndKeepsWhatItMeasured$"  # a round within --timeout 3s
  "^Fleet\\.TimeoutInterruptsAJobThereAndItsResultsFolderComesBack$"  # a round within --timeout 20s
  "^Tegrastats\\.RunStagesGetTheLogsEnergyWhereTheyHappened$"  # log lines within the run's 1.26 s wait
)
foreach(_sb_re IN LISTS _sb_serial_tests)
  set(_sb_matched FALSE)
  foreach(_sb_name IN LISTS sb_integration_test_TESTS)
    if(_sb_name MATCHES "${_sb_re}")
      set_tests_properties("${_sb_name}" PROPERTIES RUN_SERIAL TRUE)
      set(_sb_matched TRUE)
    endif()
  endforeach()
  # Only where the binary's tests were discovered (an unbuilt binary declares none), and not
  # for the GPU and fleet tests, which a build without the Vulkan module or SB_WITH_FLEET
  # leaves out.
  if(NOT _sb_matched AND sb_integration_test_TESTS AND NOT _sb_re MATCHES "^\\^(Gpu|Fleet)")
    message(WARNING "tests/serial_tests.cmake: '${_sb_re}' matches no integration test")
  endif()
endforeach()
