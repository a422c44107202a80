# kdns build. `make` builds release binaries into build/bin/.
#
# Variants (each in its own directory, with header dependency tracking):
#   release  build/bin, build/obj          (default)
#   debug    build/debug/{bin,obj}
#   asan     build/asan/{bin,obj}          ASan + UBSan
#   tsan     build/tsan/{bin,obj}
#   fuzz     build/fuzz/{bin,obj}          clang + libFuzzer (+ ASan, UBSan)
#
# Source rules: common/**.cc is the static library libkdns_common.a; <program>/**.cc minus
# main.cc is lib<program>.a, so tests drive the program's classes without the process;
# every *_test.cc under common/, the programs and test/support, plus test/unit/*.cc and
# test/support/*.cc, is the unit test binary; test/integration/*.cc plus test/support/*.cc
# the integration test binary; test/fuzz/*_fuzzer.cc are
# fuzz targets (replayed over their corpus in ordinary builds); test/bench/*_bench.cc are
# benchmarks.

VARIANT ?= release
PROGRAMS ?= frontend-cache kubedns nanny sidecar

ifeq ($(VARIANT),release)
  OUT ?= build
else
  OUT ?= build/$(VARIANT)
endif
# Which parts of common/ go into the library and the unit tests (a subset lets work on one
# module build while another is half-written): e.g. COMMON_DIRS="common/base common/dns".
COMMON_DIRS ?= common
BIN := $(OUT)/bin
OBJ := $(OUT)/obj

PKGS := libuv libcares libcurl gflags libglog yaml-cpp openssl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CXX := g++
CXXSTD := -std=c++20
WARN := -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-unused-parameter
ifneq ($(CI),)
  WARN += -Werror
endif
ifneq ($(WERROR),)
  WARN += -Werror
endif
OPT := -O2 -g -DNDEBUG
LDEXTRA :=

ifeq ($(VARIANT),debug)
  OPT := -O0 -g3
endif
ifeq ($(VARIANT),asan)
  OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  LDEXTRA := -fsanitize=address,undefined
endif
ifeq ($(VARIANT),tsan)
  OPT := -O1 -g -fsanitize=thread
  LDEXTRA := -fsanitize=thread
endif
ifeq ($(VARIANT),fuzz)
  CXX := clang++
  WARN := -Wall -Wextra -Wno-unused-parameter
  OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -DKDNS_FUZZING
  LDEXTRA := -fsanitize=address,undefined
endif

CPPFLAGS := -I. -MMD -MP $(PKG_CFLAGS)
CXXFLAGS := $(CXXSTD) $(WARN) $(OPT) -pthread
LDFLAGS := -pthread $(LDEXTRA)
LDLIBS := $(PKG_LIBS)

find_cc = $(shell find $(1) -name '*.cc' 2>/dev/null | LC_ALL=C sort)

# The version and commit every binary reports (--version, kdns_build_info, the start-up
# line): mk/version.sh's, from `git describe`, or KDNS_VERSION/KDNS_REVISION where there is
# no .git (the image build). The header is rewritten only when they change, so only
# common/base/version.o recompiles then and a build with nothing new rebuilds nothing. If
# the version cannot be told, the header is missing and its rule fails with why.
KDNS_VERSION ?=
KDNS_REVISION ?=
VERSION_H := $(OBJ)/gen/kdns_version.h
$(shell KDNS_VERSION='$(KDNS_VERSION)' KDNS_REVISION='$(KDNS_REVISION)' \
  mk/version.sh --header $(VERSION_H) 2>/dev/null || rm -f $(VERSION_H))
$(VERSION_H):
	@KDNS_VERSION='$(KDNS_VERSION)' KDNS_REVISION='$(KDNS_REVISION)' mk/version.sh --header $@
$(OBJ)/common/base/version.o: $(VERSION_H)
$(OBJ)/common/base/version.o: CPPFLAGS += -I$(OBJ)/gen

COMMON_SRCS := $(filter-out %_test.cc,$(call find_cc,$(COMMON_DIRS)))
COMMON_LIB := $(OBJ)/libkdns_common.a
# test/support: test code both test binaries link (the scripted fake DNS server), with its
# own unit tests.
SUPPORT_SRCS := $(filter-out %_test.cc,$(call find_cc,test/support))
UNIT_SRCS := $(filter %_test.cc,$(call find_cc,$(COMMON_DIRS) $(PROGRAMS) test/support)) \
             $(call find_cc,test/unit) $(SUPPORT_SRCS)
INTEGRATION_SRCS := $(call find_cc,test/integration) test/unit/catch_main.cc $(SUPPORT_SRCS)
FUZZ_SRCS := $(wildcard test/fuzz/*_fuzzer.cc)
FUZZERS := $(patsubst test/fuzz/%_fuzzer.cc,%,$(FUZZ_SRCS))
BENCH_SRCS := $(wildcard test/bench/*_bench.cc)
BENCHES := $(patsubst test/bench/%_bench.cc,%_bench,$(BENCH_SRCS))

objs = $(patsubst %.cc,$(OBJ)/%.o,$(1))
prog_srcs = $(filter-out %_test.cc %/main.cc,$(call find_cc,$(1)))
prog_lib = $(OBJ)/$(1)/lib$(1).a
PROG_LIBS := $(foreach p,$(PROGRAMS),$(call prog_lib,$(p)))

NPROC := $(shell nproc 2>/dev/null || echo 2)
# Keep the objects that pattern-rule chains build (fuzz and bench targets): as intermediates
# they would be deleted and relinked on every run. (Not .SECONDARY: with no prerequisites,
# which would also let make skip a new test object older than its binary.)
.PRECIOUS: $(OBJ)/%.o

.DEFAULT_GOAL := all
.PHONY: all deps build run test unit integration fuzz-replay bench bench-compare bench-scaling \
        fuzz asan tsan debug format lint clean check-format check-layers images

all: $(addprefix $(BIN)/,$(PROGRAMS))

deps:
	@mk/deps.sh

build: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all

$(OBJ)/%.o: %.cc
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

# An archive is rebuilt when its member list changes (a file added or removed, or another
# COMMON_DIRS subset built into the same directory), not only when a member is newer.
member_list = $(shell mkdir -p $(dir $(1)) && echo '$(2)' | cmp -s - $(1) || echo '$(2)' > $(1))$(1)

$(COMMON_LIB): $(call objs,$(COMMON_SRCS)) $(call member_list,$(OBJ)/common.members,$(COMMON_SRCS))
	@mkdir -p $(@D)
	@rm -f $@
	ar rcs $@ $(filter %.o,$^)

define PROGRAM_RULES
$(call prog_lib,$(1)): $(call objs,$(call prog_srcs,$(1))) $$(call member_list,$(OBJ)/$(1)/members,$(call prog_srcs,$(1)))
	@mkdir -p $$(@D)
	@rm -f $$@
	ar rcs $$@ $$(filter %.o,$$^)

$(BIN)/$(1): $(OBJ)/$(1)/main.o $(call prog_lib,$(1)) $(COMMON_LIB)
	@mkdir -p $$(@D)
	$(CXX) $(LDFLAGS) $$^ $(LDLIBS) -o $$@
endef
$(foreach p,$(PROGRAMS),$(eval $(call PROGRAM_RULES,$(p))))

# An archive with no members is not portable; every program library carries this object.
$(OBJ)/empty.o:
	@mkdir -p $(@D)
	echo '' | $(CXX) -x c++ -c - -o $@

$(PROG_LIBS): $(OBJ)/empty.o

$(BIN)/unit_tests: $(call objs,$(UNIT_SRCS)) $(PROG_LIBS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BIN)/integration_tests: $(call objs,$(INTEGRATION_SRCS)) $(PROG_LIBS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

# Fuzz targets: real libFuzzer binaries in the fuzz variant, corpus replayers elsewhere.
ifeq ($(VARIANT),fuzz)
$(BIN)/%_fuzzer: $(OBJ)/test/fuzz/%_fuzzer.o $(PROG_LIBS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -fsanitize=fuzzer $^ $(LDLIBS) -o $@
FUZZ_BINS := $(addprefix $(BIN)/,$(addsuffix _fuzzer,$(FUZZERS)))
else
$(BIN)/%_fuzzer: $(OBJ)/test/fuzz/%_fuzzer.o $(OBJ)/test/fuzz/replay_main.o $(PROG_LIBS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@
FUZZ_BINS := $(addprefix $(BIN)/,$(addsuffix _fuzzer,$(FUZZERS)))
endif

$(BIN)/%_bench: $(OBJ)/test/bench/%_bench.o $(PROG_LIBS) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@

TEST_BINS := $(addprefix $(BIN)/,$(PROGRAMS)) $(BIN)/unit_tests $(BIN)/integration_tests \
             $(FUZZ_BINS)

test-binaries: $(TEST_BINS)

# `make test`: install, build, run every suite, one closing line `N passed, M failed, K skipped`.
test: deps
	@$(MAKE) --no-print-directory -j$(NPROC) test-binaries
	@test/run_suites.sh $(OUT)

asan:
	@$(MAKE) --no-print-directory VARIANT=asan test

tsan:
	@$(MAKE) --no-print-directory VARIANT=tsan test

debug:
	@$(MAKE) --no-print-directory VARIANT=debug all

# `make fuzz`: build the libFuzzer targets; FUZZ_SECONDS=N runs each for N seconds.
FUZZ_SECONDS ?= 60
fuzz: deps
	@$(MAKE) --no-print-directory -j$(NPROC) VARIANT=fuzz fuzz-binaries
	@test/fuzz/run_fuzzers.sh build/fuzz/bin $(FUZZ_SECONDS)

fuzz-binaries: $(FUZZ_BINS)

bench: deps
	@$(MAKE) --no-print-directory -j$(NPROC) $(addprefix $(BIN)/,$(BENCHES)) all
	@test/bench/run_benches.sh $(BIN)

# `make bench-compare BASELINE=ref`: cache-hit CPU per query of this build against ref's
# (built once into build/baseline/SHA by mk/baseline.sh), frontend-cache on one thread,
# ROUNDS alternating rounds (test/bench/frontend_cache_bench.sh, COMPARE_ONLY=1); FC_ARGS
# adds flags to this build's frontend-cache only.
BASELINE ?= HEAD~1
ROUNDS ?= 6
bench-compare: deps
	@$(MAKE) --no-print-directory -j$(NPROC) $(BIN)/dnsload_bench all
	@base=$$(mk/baseline.sh $(BASELINE)) && BASELINE_BIN=$$base COMPARE_ONLY=1 FC_ARGS="$(FC_ARGS)" \
	  THREAD_ROUNDS=$(ROUNDS) test/bench/frontend_cache_bench.sh $(BIN)

# `make bench-scaling`: kubedns and frontend-cache saturated at 1, 2, 4, 8 and 16 serving
# threads, pinned to cores 0..N-1 with the client on the upper half (test/bench/
# scaling_bench.sh; thread counts above the cores are skipped). Minutes: not in `make bench`.
bench-scaling: deps
	@$(MAKE) --no-print-directory -j$(NPROC) $(BIN)/dnsload_bench all
	@test/bench/scaling_bench.sh $(BIN)

run: deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@mk/run.sh

# Container images (images/Dockerfile); needs docker or podman with a running engine.
images:
	@images/build.sh

SOURCES = $(shell git ls-files '*.cc' '*.h' 2>/dev/null || find common $(PROGRAMS) test -name '*.cc' -o -name '*.h')

format:
	@clang-format -i $(SOURCES)

check-format:
	@clang-format --dry-run --Werror $(SOURCES)

# No #include runs back up the layer order of common/ (docs/design.md, "Layers").
check-layers:
	@python3 mk/check_layers.py

# clang-tidy over every translation unit; the checks and which are errors live in .clang-tidy.
lint: check-format check-layers $(VERSION_H)
	@mk/lint.sh $(OBJ)

clean:
	rm -rf build

-include $(shell find $(OUT)/obj -name '*.d' 2>/dev/null)

# Catch2's std::regex code trips GCC's -Wmaybe-uninitialized under the sanitizer builds.
$(OBJ)/test/unit/catch_main.o: CXXFLAGS += -Wno-maybe-uninitialized

# glog and Catch both define CHECK, and whichever header comes last wins: every test file
# gets glog first, so that its CHECK is always Catch's (counted, reported, non-fatal). This is
# the guarantee: no test file or testing header includes glog for it, and mk/lint.sh gives
# clang-tidy the same.
$(OBJ)/%_test.o: CXXFLAGS += -include glog/logging.h
