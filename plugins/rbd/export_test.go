package rbd

// ClassKeys are the in-tree StorageClass keys of scParams, for the external
// tests.
var ClassKeys = scKeys[:]
