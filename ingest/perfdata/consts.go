package perfdata

// Record types (perf_event_header.type). Kernel records are below 64,
// records synthesized by the perf tool start at 64.
const (
	recMMAP            = 1
	recLost            = 2
	recComm            = 3
	recExit            = 4
	recThrottle        = 5
	recUnthrottle      = 6
	recFork            = 7
	recRead            = 8
	recSample          = 9
	recMMAP2           = 10
	recAux             = 11
	recItraceStart     = 12
	recLostSamples     = 13
	recSwitch          = 14
	recSwitchCPUWide   = 15
	recNamespaces      = 16
	recKsymbol         = 17
	recBPFEvent        = 18
	recCgroup          = 19
	recTextPoke        = 20
	recAuxOutputHWID   = 21
	recHeaderAttr      = 64
	recHeaderEventType = 65
	recTracingData     = 66
	recHeaderBuildID   = 67
	recFinishedRound   = 68
	recIDIndex         = 69
	recAuxtraceInfo    = 70
	recAuxtrace        = 71
	recAuxtraceError   = 72
	recThreadMap       = 73
	recCPUMap          = 74
	recStatConfig      = 75
	recStat            = 76
	recStatRound       = 77
	recEventUpdate     = 78
	recTimeConv        = 79
	recHeaderFeature   = 80
	recCompressed      = 81
	recFinishedInit    = 82
	recCompressed2     = 83

	// recMaxPlausible bounds the type of a record we try to read: kernel
	// types are below 64 and perf's own below 128 for the foreseeable
	// future. A larger type is not a record (e.g. text after a pipe stream).
	recMaxPlausible = 128
)

var recNames = map[uint32]string{
	recMMAP: "MMAP", recLost: "LOST", recComm: "COMM", recExit: "EXIT",
	recThrottle: "THROTTLE", recUnthrottle: "UNTHROTTLE", recFork: "FORK",
	recRead: "READ", recSample: "SAMPLE", recMMAP2: "MMAP2", recAux: "AUX",
	recItraceStart: "ITRACE_START", recLostSamples: "LOST_SAMPLES",
	recSwitch: "SWITCH", recSwitchCPUWide: "SWITCH_CPU_WIDE",
	recNamespaces: "NAMESPACES", recKsymbol: "KSYMBOL", recBPFEvent: "BPF_EVENT",
	recCgroup: "CGROUP", recTextPoke: "TEXT_POKE", recAuxOutputHWID: "AUX_OUTPUT_HW_ID",
	recHeaderAttr: "HEADER_ATTR", recHeaderEventType: "HEADER_EVENT_TYPE",
	recTracingData: "HEADER_TRACING_DATA", recHeaderBuildID: "HEADER_BUILD_ID",
	recFinishedRound: "FINISHED_ROUND", recIDIndex: "ID_INDEX",
	recAuxtraceInfo: "AUXTRACE_INFO", recAuxtrace: "AUXTRACE",
	recAuxtraceError: "AUXTRACE_ERROR", recThreadMap: "THREAD_MAP",
	recCPUMap: "CPU_MAP", recStatConfig: "STAT_CONFIG", recStat: "STAT",
	recStatRound: "STAT_ROUND", recEventUpdate: "EVENT_UPDATE",
	recTimeConv: "TIME_CONV", recHeaderFeature: "HEADER_FEATURE",
	recCompressed: "COMPRESSED", recFinishedInit: "FINISHED_INIT",
	recCompressed2: "COMPRESSED2",
}

func recName(t uint32) string {
	if n, ok := recNames[t]; ok {
		return n
	}
	if t < 64 {
		return "kernel record " + itoa(int64(t))
	}
	return "perf record " + itoa(int64(t))
}

// perf_event_header.misc bits.
const (
	miscCommExec         = 1 << 13 // COMM: renamed by exec
	miscSwitchOut        = 1 << 13 // SWITCH*: switching out
	miscSwitchOutPreempt = 1 << 14 // SWITCH*: preempted while runnable
)

// perf_event_attr.sample_type bits.
const (
	sampleIP           = 1 << 0
	sampleTID          = 1 << 1
	sampleTime         = 1 << 2
	sampleAddr         = 1 << 3
	sampleRead         = 1 << 4
	sampleCallchain    = 1 << 5
	sampleID           = 1 << 6
	sampleCPU          = 1 << 7
	samplePeriod       = 1 << 8
	sampleStreamID     = 1 << 9
	sampleRaw          = 1 << 10
	sampleBranchStack  = 1 << 11
	sampleRegsUser     = 1 << 12
	sampleStackUser    = 1 << 13
	sampleWeight       = 1 << 14
	sampleDataSrc      = 1 << 15
	sampleIdentifier   = 1 << 16
	sampleTransaction  = 1 << 17
	sampleRegsIntr     = 1 << 18
	samplePhysAddr     = 1 << 19
	sampleAux          = 1 << 20
	sampleCgroup       = 1 << 21
	sampleDataPageSize = 1 << 22
	sampleCodePageSize = 1 << 23
	sampleWeightStruct = 1 << 24

	sampleKnown = 1<<25 - 1
)

// read_format bits.
const (
	readTotalTimeEnabled = 1 << 0
	readTotalTimeRunning = 1 << 1
	readID               = 1 << 2
	readGroup            = 1 << 3
	readLost             = 1 << 4
)

// branch_sample_type bits that change the BRANCH_STACK layout.
const (
	branchHWIndex  = 1 << 17
	branchCounters = 1 << 19
)

// perf_event_attr flag bits (offset 40) we use.
const (
	flagFreq        = 10
	flagSampleIDAll = 18
	flagUseClockID  = 25
)

// attr.type values.
const (
	typeHardware   = 0
	typeSoftware   = 1
	typeTracepoint = 2
	typeHWCache    = 3
	typeRaw        = 4
	typeBreakpoint = 5
)

// Feature bits of the file header (and ids of pipe HEADER_FEATURE records).
const (
	featTracingData    = 1
	featBuildID        = 2
	featHostname       = 3
	featOSRelease      = 4
	featVersion        = 5
	featArch           = 6
	featNrCPUs         = 7
	featCPUDesc        = 8
	featCPUID          = 9
	featTotalMem       = 10
	featCmdline        = 11
	featEventDesc      = 12
	featCPUTopology    = 13
	featNUMATopology   = 14
	featBranchStack    = 15
	featPMUMappings    = 16
	featGroupDesc      = 17
	featAuxtrace       = 18
	featStat           = 19
	featCache          = 20
	featSampleTime     = 21
	featMemTopology    = 22
	featClockID        = 23
	featDirFormat      = 24
	featBPFProgInfo    = 25
	featBPFBTF         = 26
	featCompressed     = 27
	featCPUPMUCaps     = 28
	featClockData      = 29
	featHybridTopology = 30
	featPMUCaps        = 31
	featCPUDomainInfo  = 32
)

// featNames are perf's own names for the features (as "perf report
// --header" lists missing ones).
var featNames = [...]string{
	featTracingData: "TRACING_DATA", featBuildID: "BUILD_ID", featHostname: "HOSTNAME",
	featOSRelease: "OSRELEASE", featVersion: "VERSION", featArch: "ARCH",
	featNrCPUs: "NRCPUS", featCPUDesc: "CPUDESC", featCPUID: "CPUID",
	featTotalMem: "TOTAL_MEM", featCmdline: "CMDLINE", featEventDesc: "EVENT_DESC",
	featCPUTopology: "CPU_TOPOLOGY", featNUMATopology: "NUMA_TOPOLOGY",
	featBranchStack: "BRANCH_STACK", featPMUMappings: "PMU_MAPPINGS",
	featGroupDesc: "GROUP_DESC", featAuxtrace: "AUXTRACE", featStat: "STAT",
	featCache: "CACHE", featSampleTime: "SAMPLE_TIME", featMemTopology: "MEM_TOPOLOGY",
	featClockID: "CLOCKID", featDirFormat: "DIR_FORMAT", featBPFProgInfo: "BPF_PROG_INFO",
	featBPFBTF: "BPF_BTF", featCompressed: "COMPRESSED", featCPUPMUCaps: "CPU_PMU_CAPS",
	featClockData: "CLOCK_DATA", featHybridTopology: "HYBRID_TOPOLOGY",
	featPMUCaps: "PMU_CAPS", featCPUDomainInfo: "CPU_DOMAIN_INFO",
}

func featName(id int) string {
	if id > 0 && id < len(featNames) && featNames[id] != "" {
		return featNames[id]
	}
	return "FEATURE_" + itoa(int64(id))
}
