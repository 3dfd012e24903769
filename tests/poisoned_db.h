// Rows no ktune writes, planted with plain SQLite into a database that holds an sm_90 device:
// what an older ktune, another tool or a hand edit may leave. Every reader must skip them (one
// warning per call) and answer for the rest.
//   - problem gemm/f32/NN/1099511627776x64x64/a16 (m = 2^40, beyond GEMM's limit): an ok trial and
//     the best of sm_90;
//   - problem gemm/f32/NN/96x64x64/a16: an ok trial and the best with config "[[[" (not JSON), and
//     a trial of status "exploded".
#pragma once
#include <sqlite3.h>

#include <string>

namespace ktune::testing {

// Returns "" on success, else SQLite's message.
inline std::string poison_database(const std::string& path) {
  static const char* const kSql = R"sql(
INSERT INTO problems (key, op, dtype, layout, m, n, k, align) VALUES
  ('gemm/f32/NN/1099511627776x64x64/a16', 'gemm', 'f32', 'NN', 1099511627776, 64, 64, 16),
  ('gemm/f32/NN/96x64x64/a16', 'gemm', 'f32', 'NN', 96, 64, 64, 16);
INSERT INTO trials (device_id, problem_id, family, config, config_hash, template_hash, status, error, median_ms, min_ms,
                    p20_ms, p80_ms, reps, tflops, registers, smem_bytes, spill_bytes, compile_s, bench_s, ktune_version, gate)
  SELECT (SELECT id FROM devices WHERE arch = 'sm_90' LIMIT 1), p.id, 'gemm_smem',
         CASE p.m WHEN 96 THEN '[[[' ELSE '{"TILE":16}' END, 'poison-' || p.m, 'abc', 'ok', '', 1e-6, 1e-6, 1e-6, 1e-6,
         1, 1.0, 0, 0, 0, 0, 0, 'poison', 2
  FROM problems p WHERE p.key IN ('gemm/f32/NN/1099511627776x64x64/a16', 'gemm/f32/NN/96x64x64/a16');
INSERT INTO best (arch, problem_id, family, config, time_ms, tflops, trial_id)
  SELECT 'sm_90', problem_id, family, config, median_ms, tflops, id FROM trials WHERE config_hash LIKE 'poison-%';
INSERT INTO trials (device_id, problem_id, family, config, config_hash, template_hash, status, error, median_ms, min_ms,
                    p20_ms, p80_ms, reps, tflops, registers, smem_bytes, spill_bytes, compile_s, bench_s, ktune_version, gate)
  SELECT (SELECT id FROM devices WHERE arch = 'sm_90' LIMIT 1), p.id, 'gemm_smem', '{"TILE":8}', 'poison-status', 'abc',
         'exploded', '', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'poison', 2
  FROM problems p WHERE p.key = 'gemm/f32/NN/96x64x64/a16';
)sql";
  sqlite3* db = nullptr;
  std::string err;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK)
    err = sqlite3_errmsg(db);
  else if (sqlite3_exec(db, kSql, nullptr, nullptr, nullptr) != SQLITE_OK)
    err = sqlite3_errmsg(db);
  sqlite3_close(db);
  return err;
}

} // namespace ktune::testing
