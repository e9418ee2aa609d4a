// Package judge is the out-of-sample protocol by which the recommended
// policy is chosen: candidates are compared with a reference (FGD) on pod
// lists of every family, paired by seed; a candidate's constants are
// tuned on [TuneLists] with [TuneSeeds], and it is judged on [JudgeLists]
// with [JudgeSeeds], on the shared openb lists and on any other lists
// given (gpufrag cluster judge). The two sets share neither a list
// (shares and generator seeds differ) nor a simulation seed. [Judge] runs
// it on a protocol.Grid per list; a [Judgement] holds the paired
// differences with their 95% Student-t intervals and the rule's verdict,
// which [WriteText] prints.
package judge
