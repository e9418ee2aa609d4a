// Package lists reads and writes the node and pod lists of package
// cluster's model.
//
// [ReadNodesCSV] and [ReadPodsCSV] read the openb trace (Alibaba
// cluster-trace-gpu-v2023: node lists with or without the model column,
// pod lists with 5 or 11 columns); [ReadJSON] and [WriteJSON] read and
// write package cluster's own JSON form ([File]); [ReadNodes] and
// [ReadPods] take either form, telling JSON from CSV by name or content;
// [ReadNodesFile] and [ReadPodsFile] open a file by name for the commands
// and the experiment suite; [WritePodsCSV] writes the openb form.
//
// The readers never panic; their errors (*cluster.InputError, wrapping
// cluster.ErrBadInput) name the input, the line (the header is line 1)
// and the field, and echo at most 64 bytes of a bad value. They bound
// what they read: a line at most [MaxLineBytes], an input at most
// [MaxInputBytes], and binary input is refused at its first bytes.
package lists
