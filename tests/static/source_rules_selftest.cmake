# Shows that each rule of source_rules.cmake fails on a deliberate breach and
# passes without it: builds small trees under WORK and runs the rules on them.
#   cmake -DWORK=<scratch dir> -DRULES=<source_rules.cmake> -P source_rules_selftest.cmake
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE ${WORK})
set(failures "")

# run_rule(NAME tree rule expect_pass expected_text [allowed])
function(run_rule name tree rule expect_pass expected_text)
  set(extra "")
  if(ARGC GREATER 5)
    set(extra "-DALLOWED=${ARGV5}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${tree} -DRULE=${rule} ${extra} -P ${RULES}
                  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(text "${out}${err}")
  if(expect_pass AND NOT result EQUAL 0)
    string(APPEND failures "${name}: expected to pass, failed:\n${text}\n")
  elseif(NOT expect_pass AND result EQUAL 0)
    string(APPEND failures "${name}: expected to fail, passed\n")
  elseif(NOT expected_text STREQUAL "" AND NOT text MATCHES "${expected_text}")
    string(APPEND failures "${name}: output lacks '${expected_text}':\n${text}\n")
  endif()
  set(failures "${failures}" PARENT_SCOPE)
endfunction()

# A clean tree.
set(clean ${WORK}/clean)
file(WRITE ${clean}/scheduler/pool.h "#pragma once\n#include <vector>\n#include \"base/result.h\"\n")
file(WRITE ${clean}/api/routes.cc "#include \"executor/spec.h\"\n#include \"scheduler/pool.h\"\n")
file(WRITE ${clean}/service/main.cc "#include \"client/commands.h\"\n")
file(WRITE ${clean}/base/clock.cc "auto t = std::chrono::steady_clock::now();\n")
file(WRITE ${clean}/executor/trainer.cc "// steady_clock::now() in a comment is not a read\nauto t = clock.now();\n")
foreach(rule includes clock size)
  run_rule("clean tree, ${rule}" ${clean} ${rule} TRUE "")
endforeach()

# Each breach alone.
set(tree ${WORK}/layering)
file(WRITE ${tree}/scheduler/pool.h "#pragma once\n#include \"db/connection.h\"\n")
run_rule("scheduler/ including db/" ${tree} includes FALSE "scheduler/pool.h:2: includes: scheduler/ may not use db/")

set(tree ${WORK}/pure)
file(WRITE ${tree}/executor/net.cc "#include <boost/asio.hpp>\n")
run_rule("executor/ including Asio" ${tree} includes FALSE "executor/net.cc:1: includes: executor/ is a pure library: no boost/")

set(tree ${WORK}/client_outside_main)
file(WRITE ${tree}/service/serve.cc "\n#include \"client/options.h\"\n")
run_rule("service/ using client/ outside main" ${tree} includes FALSE "service/serve.cc:2: includes: service/ may not use client/")

set(tree ${WORK}/clock)
file(WRITE ${tree}/db/connection.cc "int x;\nstd::this_thread::sleep_for(std::chrono::seconds(1));\n")
run_rule("a direct sleep" ${tree} clock FALSE "db/connection.cc:2: clock: reads time")
file(WRITE ${tree}/allowed.txt "# not yet converted\ndb/connection.cc\n")
run_rule("a direct sleep, listed" ${tree} clock TRUE "" ${tree}/allowed.txt)
file(WRITE ${tree}/db/connection.cc "int x;\n")
run_rule("a listed file that keeps the rule" ${tree} clock FALSE "remove it from" ${tree}/allowed.txt)
file(WRITE ${tree}/service/wait.cc "if (cv.wait_for(lock, timeout)) {}\n")
run_rule("a timed wait" ${tree} clock FALSE "service/wait.cc:1: clock")

set(tree ${WORK}/size)
string(REPEAT "int x;\n" 701 long_text)
string(REPEAT "int x;\n" 800 table_text)
file(WRITE ${tree}/api/long.cc "${long_text}")
file(WRITE ${tree}/lightning/devices.cc "${table_text}")
run_rule("a 701-line file" ${tree} size FALSE "api/long.cc:701: size: 701 lines, over 700")
file(WRITE ${tree}/allowed.txt "api/long.cc 701\n")
run_rule("a 701-line file, listed" ${tree} size TRUE "" ${tree}/allowed.txt)
file(APPEND ${tree}/api/long.cc "int y;\n")
run_rule("a listed file that grew" ${tree} size FALSE "grown past the 701" ${tree}/allowed.txt)
file(WRITE ${tree}/allowed.txt "api/long.cc 702\napi/gone.cc 900\n")
run_rule("a listed file that is gone" ${tree} size FALSE "api/gone.cc:0: size: listed" ${tree}/allowed.txt)

if(NOT failures STREQUAL "")
  message(FATAL_ERROR "${failures}")
endif()
message("every rule fails on its breach and passes without it")
