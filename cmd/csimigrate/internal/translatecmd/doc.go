// Package translatecmd is csimigrate translate: the CSI equivalents of the
// input's in-tree PVs, StorageClasses and workloads' inline volumes.
package translatecmd
