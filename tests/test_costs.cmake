# What ctest -j schedules first on a build that has never run its tests (a fresh clone, a new
# build directory): CTest orders the tests by their COST, which it learns from each run into
# Testing/Temporary/CTestCostData.txt; with none learned every cost is 0 and the tests start in
# the order they are declared, so a long test declared late (Dist.*, DocumentFuzz.* in the cli's
# binary) can start last and run alone at the end. This table gives the tests that took 5 s or
# more (serial seconds, the full suite on the 2-core VM, 2026-12-07; since then
# Run.AStalledProcess... is cut to 7 s, and Rpc.AServerThatAnswersTheHelloAndThenStops... to
# under 5 s, so it is left out) that cost, so that they
# start first. tests/order/CMakeLists.txt hooks it into ctest, after every folder declared its
# tests, and only while the build has no cost data: from the first run on, ctest's own
# measurements order the tests (an explicit COST would override them for good). A name no
# longer declared (a test renamed, the fleet or GPU tests left out) is ignored. The RUN_SERIAL
# tests (tests/serial_tests.cmake: the integration tests that need an idle machine) still run
# alone, and ctest starts one only when nothing else runs; the cost decides when.
set(_sb_test_costs
  Ansible.ThePlaybookRunsTheJobOnEveryHostAndFetchesTheirResults                     81
  SynthModels.EveryOtherPresetLoadsAndRuns                                           77
  Dist.NewerDistributionLoadsItsVulkanDriverBesideTheTarball                         60
  Ansible.FleetRunTakesTheInventoryToo                                               54
  Fleet.TwoSshDevicesFillOneStoreWithTheirIdentitiesAndCompare                       46
  Fleet.FaultsAreRecordedPerDeviceAndResumeCompletesTheRest                          43
  Fleet.TimeoutInterruptsAJobThereAndItsResultsFolderComesBack                       41
  Fleet.DeviceFoldersKeepTheLastUsedJobsResultsAndCopies                             39
  Fleet.KillingOneDevicesSshdMidRunLeavesItsErrorAndTheOthersComplete                38
  Bench.ParityJudgesKeptRunsMetMissedOrUnresolved                                    30
  SynthModels.Qwen3MoeHasItsExpertsAndRoutesThem                                     26
  Bundle.RunShExitsOneWhenTheGateOfItsBaselineFails                                  25
  Fleet.RpcUpSplitsAModelOverTwoServersAndOpsReportsItsTransfers                     24
  Rpc.AServerThatStopsAnsweringMidRunEndsAtTheStageTimeout                           19
  SynthQuant.TheMixIsTheOneLlamaQuantizeChooses                                      19
  Report.DrawsEveryChartInHeadlessChromiumWithoutAnyRequest                          17
  Dist.HostTarballRunsWithTheBuildOutOfReach                                         15
  Gpu.SustainedRoundsAndAServerThatOffloadsToTheGpu                                  14
  Bundle.RunShSaysItCouldNotMeasureWithExit2                                         13
  Bundle.TheJobHoldsRunShSpecStagebenchAndModel                                      13
  Bundle.RunShMeasuresInAnEmptyEnvironmentWithTheArgumentsGivenIt                    13
  Ingest.ResultsFoldersAreStoredOnceAndDamagedOnesSkipped                            12
  Ingest.AFolderThatMeasuredNothingIsSkippedWithItsError                             12
  Signals.SignalsAtRandomPointsOfEveryLongCommand                                    12
  DocumentFuzz.ReadersEndInExit0OrOneBadInputLine                                    11
  Bundle.TheLavaJobIsValidForLavaCommon                                              11
  Faults.ASensorCommandThatHangsOrFloodsCostsItsDeadlineOnly                         10
  SensorCommandFuzz.AMisbehavingCommandCostsItsDeadlineAtMostAndIsAbsentWithAWarning 10
  SynthModels.Qwen3ReadsBackAsPublishedRunsAndMatchesItsConfigJson                   10
  PgCli.TwoParallelFleetRunsIntoOneDatabaseThenCompareReportAndCopyBothWays          10
  SynthModels.Gemma3HasItsShapesAndTheSlidingWindow                                  10
  Gpu.HybridMovesTheCacheBetweenTheCpuAndTheGpuBothWays                              10
  Gpu.AKvCacheTooLargeForTheGpuSaysSoAndKeepsTheTestsBeforeIt                        10
  Rpc.CtrlCEndsARunWaitingOnAServerThatStoppedAnswering                              9
  Gpu.EachStagesOpsGetTheDevicesTimesOfTheirOwnKernels                               8
  Fleet.AdbDevicesThroughTheStandIn                                                  8
  Explain.NamesTheMicroBatchAsTheLargestPartOfThePrefillGap                          8
  FaultsInputs.CtrlCEndsTheWaitForALockedStore                                       8
  Sustained.AThroughputDropWithoutSensorsIsNotCalledThrottling                       8
  Run.AStalledProcessIsCountedWarnedAndLeavesTheRobustRateAlone                      7
  BadStore.ALockedStoreWaitsThenWritesTheDocumentBesideIt                            7
  Demo.WritesModelResultsHybridAndAdvice                                             7
  Run.RooflineColumnsFollowFromTheMeasuredBandwidth                                  7
  Rpc.AServerThatAcceptsAndNeverAnswersIsBadInput                                    6
  SynthModels.Lfm2HasItsShapesAndShortConvolutions                                   6
  Discover.AVcgencmdThatHangsOrFloodsIsAbsentWithAWarning                            6
  Gpu.OpsOnVulkanSeparateOpFromCallAndPriceTheFallback                               6
  SysfsFuzz.DamagedTreesNeverThrowBlockOrBreakTheReport                              5
  Bundle.BadJobsAreUsageErrors                                                       5
  Tegrastats.RunStagesGetTheLogsEnergyWhereTheyHappened                              5
)
while(_sb_test_costs)
  list(POP_FRONT _sb_test_costs _sb_name _sb_cost)
  set_tests_properties(${_sb_name} PROPERTIES COST ${_sb_cost})
endwhile()
