// TimedForwardCommandController: forward_command_controller's topic interface with a command watchdog.
//
// Commands: std_msgs/msg/Float64MultiArray on ~/commands (/<controller>/commands), one value per joint in
// the order of the `joints` parameter, written to the `<joint>/<interface_name>` command interfaces on every
// update, as forward_command_controller/ForwardCommandController does.
//
// The watchdog: a command older than `command_timeout` seconds (time of arrival, on the controller
// manager's clock) no longer applies; every command interface is then written `stop_value` (default 0: a
// velocity- or effort-commanded motor stops) until the next valid command. Before the first command, and on
// activation and deactivation, `stop_value` is written too. So a group stops by itself when the node
// commanding it dies without a word (SIGKILL, a lost network, a hung process): within command_timeout plus
// one update period. A command with a non-finite value or the wrong number of values is refused (logged,
// throttled) and the previous command ages out.
//
// Parameters: joints (string array), interface_name (string), command_timeout (s, > 0, default 0.25),
// stop_value (default 0.0).

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "controller_interface/controller_interface.hpp"
#include "pluginlib/class_list_macros.hpp"
#include "rclcpp/rclcpp.hpp"
#include "rclcpp_lifecycle/state.hpp"
#include "realtime_tools/realtime_buffer.hpp"
#include "std_msgs/msg/float64_multi_array.hpp"

namespace mechanism_model_controllers
{

using controller_interface::CallbackReturn;
using controller_interface::InterfaceConfiguration;
using controller_interface::interface_configuration_type;
using controller_interface::return_type;

class TimedForwardCommandController : public controller_interface::ControllerInterface
{
public:
  CallbackReturn on_init() override
  {
    try {
      auto_declare<std::vector<std::string>>("joints", std::vector<std::string>());
      auto_declare<std::string>("interface_name", "");
      auto_declare<double>("command_timeout", 0.25);
      auto_declare<double>("stop_value", 0.0);
    } catch (const std::exception & e) {
      fprintf(stderr, "TimedForwardCommandController: cannot declare parameters: %s\n", e.what());
      return CallbackReturn::ERROR;
    }
    return CallbackReturn::SUCCESS;
  }

  InterfaceConfiguration command_interface_configuration() const override
  {
    InterfaceConfiguration config{interface_configuration_type::INDIVIDUAL, {}};
    for (const auto & joint : joints_) {
      config.names.push_back(joint + "/" + interface_name_);
    }
    return config;
  }

  InterfaceConfiguration state_interface_configuration() const override
  {
    return InterfaceConfiguration{interface_configuration_type::NONE, {}};
  }

  CallbackReturn on_configure(const rclcpp_lifecycle::State &) override
  {
    auto node = get_node();
    joints_ = node->get_parameter("joints").as_string_array();
    interface_name_ = node->get_parameter("interface_name").as_string();
    timeout_ = node->get_parameter("command_timeout").as_double();
    stop_value_ = node->get_parameter("stop_value").as_double();
    if (joints_.empty()) {
      RCLCPP_ERROR(node->get_logger(), "parameter 'joints' is empty");
      return CallbackReturn::ERROR;
    }
    if (interface_name_.empty()) {
      RCLCPP_ERROR(node->get_logger(), "parameter 'interface_name' is empty");
      return CallbackReturn::ERROR;
    }
    if (!(std::isfinite(timeout_) && timeout_ > 0.0)) {
      RCLCPP_ERROR(
        node->get_logger(), "parameter 'command_timeout' must be a positive number of seconds, got %g",
        timeout_);
      return CallbackReturn::ERROR;
    }
    if (!std::isfinite(stop_value_)) {
      RCLCPP_ERROR(node->get_logger(), "parameter 'stop_value' must be finite");
      return CallbackReturn::ERROR;
    }
    subscription_ = node->create_subscription<std_msgs::msg::Float64MultiArray>(
      "~/commands", rclcpp::SystemDefaultsQoS(),
      [this](const std_msgs::msg::Float64MultiArray::SharedPtr msg) { on_command(msg); });
    RCLCPP_INFO(
      node->get_logger(), "%zu joints (%s), command_timeout %.3f s, stop value %g", joints_.size(),
      interface_name_.c_str(), timeout_, stop_value_);
    return CallbackReturn::SUCCESS;
  }

  CallbackReturn on_activate(const rclcpp_lifecycle::State &) override
  {
    if (command_interfaces_.size() != joints_.size()) {
      RCLCPP_ERROR(
        get_node()->get_logger(), "expected %zu command interfaces, got %zu", joints_.size(),
        command_interfaces_.size());
      return CallbackReturn::ERROR;
    }
    buffer_.writeFromNonRT(nullptr);   // only a command that arrives from now on applies
    write_stop();
    return CallbackReturn::SUCCESS;
  }

  CallbackReturn on_deactivate(const rclcpp_lifecycle::State &) override
  {
    write_stop();
    buffer_.writeFromNonRT(nullptr);
    return CallbackReturn::SUCCESS;
  }

  return_type update(const rclcpp::Time & time, const rclcpp::Duration &) override
  {
    const auto command = *buffer_.readFromRT();
    if (!command) {
      write_stop();
      return return_type::OK;
    }
    if ((time - command->received).seconds() > timeout_) {
      if (!timed_out_) {
        timed_out_ = true;
        RCLCPP_WARN(
          get_node()->get_logger(), "no command for %.3f s (command_timeout): motors stopped",
          (time - command->received).seconds());
      }
      write_stop();
      return return_type::OK;
    }
    timed_out_ = false;
    for (size_t i = 0; i < command_interfaces_.size(); ++i) {
      command_interfaces_[i].set_value(command->values[i]);
    }
    return return_type::OK;
  }

private:
  struct Command
  {
    std::vector<double> values;
    rclcpp::Time received;
  };

  void on_command(const std_msgs::msg::Float64MultiArray::SharedPtr msg)
  {
    auto node = get_node();
    if (msg->data.size() != joints_.size()) {
      RCLCPP_WARN_THROTTLE(
        node->get_logger(), *node->get_clock(), 2000, "command refused: %zu values for %zu joints",
        msg->data.size(), joints_.size());
      return;
    }
    for (double v : msg->data) {
      if (!std::isfinite(v)) {
        RCLCPP_WARN_THROTTLE(
          node->get_logger(), *node->get_clock(), 2000, "command refused: a non-finite value");
        return;
      }
    }
    auto command = std::make_shared<Command>();
    command->values = msg->data;
    command->received = node->get_clock()->now();
    buffer_.writeFromNonRT(command);
  }

  void write_stop()
  {
    for (auto & interface : command_interfaces_) {
      interface.set_value(stop_value_);
    }
  }

  std::vector<std::string> joints_;
  std::string interface_name_;
  double timeout_ = 0.25;
  double stop_value_ = 0.0;
  bool timed_out_ = false;
  realtime_tools::RealtimeBuffer<std::shared_ptr<Command>> buffer_;
  rclcpp::Subscription<std_msgs::msg::Float64MultiArray>::SharedPtr subscription_;
};

}  // namespace mechanism_model_controllers

PLUGINLIB_EXPORT_CLASS(
  mechanism_model_controllers::TimedForwardCommandController, controller_interface::ControllerInterface)
