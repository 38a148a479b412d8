# Rules over the sources that a compiler does not check, run as
#   cmake -DROOT=<tree> -DRULE=includes|clock|size [-DALLOWED=<file>] -P source_rules.cmake
# It prints every breach as `path:line: rule: what` and fails when there is
# one; it prints nothing and passes otherwise.
#
#   includes  the layering of DESIGN §1: a folder includes only the project
#             folders it may use, and lightning/, scheduler/ and executor/
#             never include Boost (Beast, Asio) or libpq.
#   clock     production code reads time, sleeps and waits with a timeout
#             through base::Clock (base/clock.h), never std::chrono's clocks
#             or std::this_thread directly; base/ is where the real clock is.
#   size      production files stay under 700 lines (the rule tables of
#             lightning/ under 900).
#   functions no function is over 80 lines, from its signature to its
#             closing brace (a definition at namespace scope or in a class
#             body; a table is data, not a function).
#
# ALLOWED lists the files still let off a rule (clock, size, functions) until
# the code is brought to it, one `path`, `path max-lines` or (functions)
# `path function max-lines` a line. The list may only
# shrink: a file on it that now keeps the rule is a breach too ("remove it
# from the list"), and a listed file may not grow past its recorded size.
cmake_minimum_required(VERSION 3.25)

if(NOT DEFINED ROOT OR NOT DEFINED RULE)
  message(FATAL_ERROR "usage: cmake -DROOT=DIR -DRULE=includes|clock|size|functions [-DALLOWED=FILE] -P source_rules.cmake")
endif()

set(production_folders base lightning pyparse scheduler executor db api client service)

# DESIGN §1's "may use", folder by folder; service/ may use everything, and
# client/ only from main.cc.
set(may_use_base "base")
set(may_use_lightning "lightning;base")
# The Python parser behind lightning::PythonParser (tree-sitter).
set(may_use_pyparse "pyparse;base;lightning")
set(may_use_scheduler "scheduler;base")
set(may_use_executor "executor;base")
set(may_use_db "db;base")
set(may_use_client "client;base;lightning;pyparse")
set(may_use_api "api;base;lightning;pyparse;scheduler;executor")
set(may_use_service "service;base;lightning;pyparse;scheduler;executor;db;api")
set(pure_folders lightning scheduler executor)

set(breaches "")
macro(breach path line text)
  string(APPEND breaches "${path}:${line}: ${RULE}: ${text}\n")
endmacro()

# The production sources below ROOT, relative to it.
set(sources "")
foreach(folder IN LISTS production_folders)
  file(GLOB_RECURSE found RELATIVE ${ROOT} ${ROOT}/${folder}/*.cc ${ROOT}/${folder}/*.h)
  list(APPEND sources ${found})
endforeach()
list(FILTER sources EXCLUDE REGEX "^client/python/")
list(SORT sources)

# For `includes`, ALLOWED lines are `path folder`: a crossing of DESIGN §1
# still made, named so that no other is.
set(allowed_crossings "")
set(used_crossings "")
if(RULE STREQUAL "includes" AND DEFINED ALLOWED AND EXISTS ${ALLOWED})
  file(STRINGS ${ALLOWED} crossing_lines REGEX "^[a-z]")
  foreach(entry IN LISTS crossing_lines)
    string(REGEX REPLACE "[ \t]+" " " entry "${entry}")
    list(APPEND allowed_crossings "${entry}")
  endforeach()
endif()

# The allowed list as `path;max` pairs in two parallel lists.
set(allowed_paths "")
set(allowed_limits "")
if(DEFINED ALLOWED AND EXISTS ${ALLOWED})
  file(STRINGS ${ALLOWED} allowed_lines)
  foreach(entry IN LISTS allowed_lines)
    if(entry MATCHES "^[ \t]*(#|$)")
      continue()
    endif()
    if(RULE STREQUAL "functions")
      # `path function max`: the key is `path function`.
      string(REGEX MATCH "^([^ \t]+)[ \t]+([^ \t]+)([ \t]+([0-9]+))?" _ "${entry}")
      list(APPEND allowed_paths "${CMAKE_MATCH_1} ${CMAKE_MATCH_2}")
      if(CMAKE_MATCH_4)
        list(APPEND allowed_limits "${CMAKE_MATCH_4}")
      else()
        list(APPEND allowed_limits "0")
      endif()
      continue()
    endif()
    string(REGEX MATCH "^([^ \t]+)([ \t]+([0-9]+))?" _ "${entry}")
    list(APPEND allowed_paths "${CMAKE_MATCH_1}")
    if(CMAKE_MATCH_3)
      list(APPEND allowed_limits "${CMAKE_MATCH_3}")
    else()
      list(APPEND allowed_limits "0")
    endif()
  endforeach()
endif()

# Reads `path` into `out_lines` (a list; semicolons made harmless).
function(read_lines path out_lines)
  file(READ ${ROOT}/${path} text)
  # A list splits at semicolons outside square brackets: neither may stay
  # (a semicolon becomes U+204F, which sources do not hold).
  string(REPLACE ";" "⁏" text "${text}")
  string(REPLACE "[" "(" text "${text}")
  string(REPLACE "]" ")" text "${text}")
  # Nor may a backslash: one that ends a line (a macro's) would escape the
  # separator, and the two lines would count as one.
  string(REPLACE "\\" "/" text "${text}")
  string(REPLACE "\n" ";" text "${text}")
  set(${out_lines} "${text}" PARENT_SCOPE)
endfunction()

function(check_includes path)
  string(REGEX MATCH "^[^/]+" folder "${path}")
  set(may_use ${may_use_${folder}})
  if(path STREQUAL "service/main.cc")
    list(APPEND may_use client)
  endif()
  read_lines(${path} lines)
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([a-z_]+)/")
      set(target "${CMAKE_MATCH_1}")
      if(target IN_LIST production_folders AND NOT target IN_LIST may_use)
        if("${path} ${target}" IN_LIST allowed_crossings)
          list(APPEND used_crossings "${path} ${target}")
        else()
          string(APPEND breaches "${path}:${number}: includes: ${folder}/ may not use ${target}/ (DESIGN §1)\n")
        endif()
      endif()
    elseif(folder IN_LIST pure_folders AND line MATCHES "^[ \t]*#[ \t]*include[ \t]*<(boost/|libpq)")
      string(APPEND breaches "${path}:${number}: includes: ${folder}/ is a pure library: no ${CMAKE_MATCH_1}\n")
    endif()
  endforeach()
  set(breaches "${breaches}" PARENT_SCOPE)
  set(used_crossings "${used_crossings}" PARENT_SCOPE)
endfunction()

# A direct read of time, sleep or timed wait: std::chrono's clocks, the
# standard's sleeps, and the timed waits of condition variables and futures
# (base::Clock's own waits are what to use instead).
set(clock_pattern "(steady_clock|system_clock|high_resolution_clock)::now|this_thread::sleep_(for|until)|[.>](wait_for|wait_until|try_lock_for|try_lock_until)\\(")

function(count_clock_reads path out_count out_first)
  read_lines(${path} lines)
  set(count 0)
  set(first "")
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(line MATCHES "^[ \t]*//")
      continue()
    endif()
    # A wait through a base::Clock (`clock_.wait_for(lock, ...)`) is the rule kept.
    string(REGEX REPLACE "[Cc]lock[_A-Za-z]*(\\(\\))?(\\.|->)wait_for\\(" "" line "${line}")
    if(line MATCHES "${clock_pattern}")
      math(EXPR count "${count} + 1")
      if(first STREQUAL "")
        set(first ${number})
      endif()
    endif()
  endforeach()
  set(${out_count} ${count} PARENT_SCOPE)
  set(${out_first} "${first}" PARENT_SCOPE)
endfunction()

# The functions of `path` as `name first-line lines` entries in `out`: a
# definition starts at a signature line at column 0 (or 2, in a class body)
# and ends at the first closing brace at that column after its opening one.
set(not_a_signature "^ *(namespace|class|struct|enum|union|using|typedef|return|if|for|while|switch|template|static_assert|case|else|do|#|//)([^A-Za-z0-9_]|$)")
function(list_functions path out)
  read_lines(${path} lines)
  set(found "")
  set(number 0)
  set(candidate "")
  set(inside FALSE)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(inside)
      if(line STREQUAL "${indent}}")
        math(EXPR length "${number} - ${start} + 1")
        list(APPEND found "${name} ${start} ${length}")
        set(inside FALSE)
        set(candidate "")
      endif()
      continue()
    endif()
    # The code of the line: no trailing comment, no trailing blanks.
    string(REGEX REPLACE "[ \t]*//.*$" "" code "${line}")
    if(code MATCHES "^(  )?[A-Za-z_~][^⁏=]*\\(" AND NOT code MATCHES "${not_a_signature}")
      set(indent "")
      if(code MATCHES "^  ")
        set(indent "  ")
      endif()
      string(REGEX MATCH "([A-Za-z_~][A-Za-z0-9_:~]*)\\(" _ "${code}")
      set(name "${CMAKE_MATCH_1}")
      set(start ${number})
      set(candidate TRUE)
    endif()
    if(candidate)
      # `) {`, `) const {`, `) -> T {`, an initializer list's `x_(y) {`; not
      # the `= {` of data.
      if(code MATCHES "\\)[^()=]*\\{$")
        set(inside TRUE)
      elseif(code MATCHES "(⁏|})$")
        set(candidate "")
      endif()
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

set(used_functions "")
foreach(path IN LISTS sources)
  list(FIND allowed_paths "${path}" allowed_index)
  if(RULE STREQUAL "includes")
    check_includes(${path})
  elseif(RULE STREQUAL "clock")
    if(path MATCHES "^base/")
      continue()
    endif()
    count_clock_reads(${path} count first)
    if(count GREATER 0 AND allowed_index EQUAL -1)
      breach(${path} ${first} "reads time, sleeps or waits directly (${count}x): take a base::Clock&")
    elseif(count EQUAL 0 AND NOT allowed_index EQUAL -1)
      breach(${path} 1 "keeps the rule now: remove it from ${ALLOWED}")
    endif()
  elseif(RULE STREQUAL "size")
    read_lines(${path} lines)
    list(LENGTH lines count)
    math(EXPR count "${count} - 1")  # the text ends with a newline
    set(limit 700)
    if(path MATCHES "^lightning/[a-z_]+\\.cc$")
      set(limit 900)
    endif()
    if(allowed_index EQUAL -1)
      if(count GREATER limit)
        breach(${path} ${count} "${count} lines, over ${limit}: split it by responsibility")
      endif()
    else()
      list(GET allowed_limits ${allowed_index} recorded)
      if(count LESS_EQUAL limit)
        breach(${path} 1 "${count} lines keeps the rule now: remove it from ${ALLOWED}")
      elseif(count GREATER recorded)
        breach(${path} ${count} "${count} lines, grown past the ${recorded} recorded in ${ALLOWED}")
      endif()
    endif()
  elseif(RULE STREQUAL "functions")
    list_functions(${path} functions)
    foreach(function IN LISTS functions)
      string(REPLACE " " ";" parts "${function}")
      list(GET parts 0 name)
      list(GET parts 1 start)
      list(GET parts 2 length)
      list(FIND allowed_paths "${path} ${name}" allowed_index)
      if(allowed_index EQUAL -1)
        if(length GREATER 80)
          breach(${path} ${start} "${name} is ${length} lines, over 80: split it into steps")
        endif()
      else()
        list(APPEND used_functions "${path} ${name}")
        list(GET allowed_limits ${allowed_index} recorded)
        if(length LESS_EQUAL 80)
          breach(${path} ${start} "${name} is ${length} lines and keeps the rule now: remove it from ${ALLOWED}")
        elseif(length GREATER recorded)
          breach(${path} ${start} "${name} is ${length} lines, grown past the ${recorded} recorded in ${ALLOWED}")
        endif()
      endif()
    endforeach()
  else()
    message(FATAL_ERROR "unknown RULE ${RULE}")
  endif()
endforeach()

foreach(crossing IN LISTS allowed_crossings)
  if(NOT crossing IN_LIST used_crossings)
    string(REPLACE " " ":0: includes: listed crossing to " text "${crossing}")
    string(APPEND breaches "${text}/ is no longer made: remove it from ${ALLOWED}\n")
  endif()
endforeach()

# A listed function that keeps the rule now (or is gone) leaves the list.
if(RULE STREQUAL "functions")
  foreach(key IN LISTS allowed_paths)
    if(NOT key IN_LIST used_functions)
      string(REPLACE " " ":0: functions: " text "${key}")
      string(APPEND breaches "${text} is listed in ${ALLOWED} but not found: remove it from the list\n")
    endif()
  endforeach()
  set(allowed_paths "")
endif()

# A listed file that no longer exists is stale.
if(RULE STREQUAL "includes")
  set(allowed_paths "")
endif()
foreach(path IN LISTS allowed_paths)
  if(NOT EXISTS ${ROOT}/${path})
    breach(${path} 0 "listed in ${ALLOWED} but gone: remove it from the list")
  endif()
endforeach()

if(NOT breaches STREQUAL "")
  message("${breaches}")
  message(FATAL_ERROR "source rule '${RULE}' broken (see above)")
endif()
