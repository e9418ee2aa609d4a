// Package gen generates openb-style pod lists of the FGD paper's four
// workload families (cpu, gpushare, gpuspec, multigpu) from a base list,
// the way the paper's variants were made: pods of one class are resampled
// from the base, or given GPU-model restrictions, and the rest stays as in
// the base ([GeneratePods]; gpufrag cluster gen-pods). [GenerateLists]
// makes named lists of many configurations ([List]), [FamilyOf] tells the
// family of an openb file name. Draws come from the configuration's seed
// only: the same inputs give the same list.
package gen
