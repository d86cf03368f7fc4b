# strata_add_test(NAME foo_test SOURCES a.cc b.cc LIBS lib... [LABELS unit|integration] [SERIAL])
# Registers one GoogleTest binary with ctest. Every test in the project goes through here.
find_package(GTest CONFIG REQUIRED)
include(GoogleTest)

function(strata_add_test)
  cmake_parse_arguments(T "SERIAL" "NAME" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} strata_test_support GTest::gtest GTest::gmock GTest::gtest_main)
  strata_warnings(${T_NAME})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  # SERIAL: ctest runs these alone (tests that measure the server's memory
  # against its budget must not share two cores with the rest of the suite).
  set(serial FALSE)
  if(T_SERIAL)
    set(serial TRUE)
  endif()
  # COST: a fresh build has no timings of its own yet (ctest keeps them in
  # Testing/Temporary/CTestCostData.txt), and ctest then starts the tests in
  # the order they were added, which put the long integration tests last and
  # left them running alone at the end. They start first instead.
  set(cost 0)
  if(T_LABELS STREQUAL "integration")
    set(cost 10)
  endif()
  gtest_discover_tests(${T_NAME}
    PROPERTIES LABELS "${T_LABELS}" RUN_SERIAL ${serial} COST ${cost}
    DISCOVERY_TIMEOUT 60
    DISCOVERY_MODE PRE_TEST)
endfunction()
