// Package stock searches the packing settings that stock schedulers offer
// without a custom scheduler, Volcano's binpack plugin and Kubernetes'
// NodeResourcesFit, on a cluster's own lists ([StockGrid], [RankStock],
// [BestStock]), and writes the best as configuration: [NewVolcanoConfig]
// and [NewKubeSchedulerConfig] are typed documents, which [WriteYAML]
// prints; [WriteReport] is the output of gpufrag cluster volcano-config.
package stock
