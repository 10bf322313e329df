# 终端报告、HTML 报告和 `demo` 的标题与标签（简体中文）。
# 与 ui.en.ftl 的消息 id 必须一一对应（否则测试失败）。参数已格式化（"43.8 ms"、"45,123"），
# 只有用来选择复数形式的计数（$n）是数字。

## JSON 枚举值的显示文字：word-<JSON 值>（结论、严重程度、一方、层、检查状态）

word-problem = 有问题
word-healthy = 健康
word-inconclusive = 无法判断
word-critical = 严重
word-warning = 警告
word-info = 提示
word-server = 服务端
word-client = 客户端
word-network = 网络
word-host = 主机
word-link = 链路层
word-transport = 传输层
word-application = 应用层
word-dns = DNS
word-ok = 正常
word-skipped = 已跳过
word-failed = 失败

## 终端报告

term-interrupted = 已中断：运行被提前停止；本报告只包含停止前测到的内容
term-measured = 测量结果
term-syn-rtt = SYN RTT
term-syn-raw = 原始 SYN，内核时间戳
term-syn-connect = connect() 计时
term-syn-line = 中位数 { $median }（最小 { $min }，最大 { $max }；{ $sent } 个中 { $answered } 个有应答，{ $how }）
term-syn-refused = 被拒绝：{ $sent } 个 SYN 中有 { $refused } 个收到 RST（没有程序在监听）
term-syn-none = { $sent } 个 SYN 都没有应答（{ $how }）
term-one-request = 单个请求
term-tls = TLS { $tls }
term-one-request-line = 建连 { $connect }{ $tls } · 首字节 { $first } · 总计 { $total }（HTTP { $status }，{ $bytes } 字节；3 次取中位数）
term-under-load = 负载下
term-load-line = { $connections } 个连接，{ $duration } s：{ $requests } 个请求，{ $rps } 请求/秒，错误 { $errors }
term-p-line = p50 { $p50 } · p90 { $p90 } · p99 { $p99 } · max { $max }
term-first-error = 第一个错误：{ $error }
term-captured = 抓包
term-read = 读取
term-capture-line = { $packets } 个分组（丢弃 { $drops } 个），{ $conns } 个连接，{ $exchanges } 个{ $http ->
    [yes] HTTP 交换
   *[no] 交换
}
term-handshake-rtt = ；握手 RTT { $rtt }
term-exchange-line = 交换延迟 p50 { $p50 } · p99 { $p99 }；服务端耗时 p50 { $server }{ $rtt }
term-exchanges-turns = 交换按方向切换划分（载荷不是 HTTP/1.x）
term-exchanges-mixed = 交换按 HTTP/1.x 请求和方向切换划分（混合）
term-pcap-written = 分组已写入 { $path }
term-warning = 警告：
term-sockets = 服务端套接字
term-sockets-listen-only = { $process }（pid { $pid }）：采样时只有监听套接字是打开的，没有可显示选项的连接
term-sockets-line = { $process }（pid { $pid }）：采样的 { $n } 个连接中 { $off } 个关闭了 TCP_NODELAY，{ $corked } 个开启了 TCP_CORK
term-kernel = 内核计数器
term-nothing = 无（见下方的检查）
term-bd-line = 典型请求（p50）{ $latency } = { $parts }
term-bd-network = 网络 { $v }
term-bd-server = 服务端 { $v }
term-bd-transfer = 传输 { $v }
term-stall-nagle = Nagle/延迟确认
term-stall-delayed-ack = 延迟确认停顿
term-stall-loss = 丢包恢复
term-stall-rto = 重传超时
term-stall-zero-window = 零窗口
term-verdict = 结论：
term-verdict-problem = { $n } 项发现；第一项解释了大部分延迟
term-verdict-healthy = 检查范围内没有发现问题
term-verdict-inconclusive = 观察到的数据不足以判断；见下方的检查
term-finding-meta = （{ $layer }，需修改的一方：{ $side }，置信度 { $confidence }）
term-why = 原因：
term-evidence = 证据：
term-fix = 修复：
term-ev-connection = 连接 { $connection }
term-ev-counter = 计数器 { $name }：{ $before } → { $after }
term-ev-socket = pid { $pid } 的套接字（fd { $fd }）：{ $option } = { $value }
term-ev-probe = 探测 { $probe }：
term-ev-log = 内核日志：{ $line }
term-checks = 检查

## 两次运行对比（demo）

cmp-syn = SYN RTT（中位数）
cmp-one-request = 单个请求（总计）
cmp-rps = 负载下每秒请求数
cmp-p50 = 负载下延迟 p50
cmp-p99 = 负载下延迟 p99
cmp-verdict = 结论
